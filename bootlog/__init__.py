"""bootlog: turn vLLM server logs into a regression database."""
__version__ = "0.1.0"
