"""Memory-native questions beside relevance: what changed when, exact terms, links between notes, commits that really landed."""
