"""Replaying the search results recorded runs saw (MERMAID's published traces)."""
