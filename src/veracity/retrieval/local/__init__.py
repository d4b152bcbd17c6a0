"""The local corpus: reading documents, building an on-disk index and searching it."""
