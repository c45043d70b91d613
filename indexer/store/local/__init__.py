"""The local store: a SQLite catalog, a tantivy index and an hnswlib file in one directory per corpus."""
