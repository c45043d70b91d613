"""Corpus files → the rows an index stores: the walk, what changed, Markdown, metadata, chunks, links.

Knows nothing of stores or search: ingest turns text into records, the engine hands them to a store."""
