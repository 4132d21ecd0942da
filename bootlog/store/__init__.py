"""The store: opening and migrating (db), the one writer (write), reads (reads), housekeeping
(housekeeping), an ingest's spill file (spill).  The schema is the Alembic migrations'."""
