"""The index: a corpus of Markdown (and what it links to) → an index any client can search.

Layers, lowest first: `config`, `errors`, `terms`, `redact` → `ingest`, `models`, `store` → `engine`
→ `search`, `memory` → `api`, `team`. A module imports only from its own layer or below."""
