"""Output: terminal text, Markdown, the HTML report, plots, CSV/JSON/Parquet, OpenMetrics."""
