"""Records -> boots: the vLLM line, the catalogue of wordings (data with samples), boot
splitting, crash loops."""
