"""The team store: one index in PostgreSQL + pgvector, one writer and any number of scoped readers."""
