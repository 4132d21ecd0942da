"""What the log does not print: the HTTP probe (+ /metrics), GPU memory, the deploy context."""
