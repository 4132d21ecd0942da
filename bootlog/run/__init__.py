"""The flows: ingest, watch, the post-deploy hook, explain, a re-read with a plan (each calls
the stages in order)."""
