"""The real-engine tier (README "The real engine"): run with `python3 -m pytest -m engine tests/engine`."""
