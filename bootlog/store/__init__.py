"""The store: SQLAlchemy models (models), opening and migrating (db), reads and writes (queries),
housekeeping (housekeeping).  Import the submodules directly; this package imports nothing so
`import bootlog.store.db` stays cheap."""
