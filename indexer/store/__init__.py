"""Where an index lives: the storage seam and its two dialects.

`local/` keeps one corpus on this machine (SQLite catalog + tantivy + hnswlib); `postgres/` keeps a team's
index in PostgreSQL + pgvector. Filters, scopes and request priority are shared by both."""
