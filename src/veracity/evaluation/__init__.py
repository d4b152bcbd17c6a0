"""Evaluation: run a method over a benchmark and measure it.

- `runner`: `veracity eval` — async, resumable runs into a run directory.
- `store`: the run directory (config, predictions, metrics, usage, caches).
- `metrics`: accuracy, F1, confusion, abstention/error rates, calibration, usage.
- `report`, `plots`: `veracity report` (Markdown and self-contained HTML).
- `compare`: `veracity compare` with paired bootstrap intervals.
- `experiment`: experiment configs with variants and the papers' reported numbers.

The leakage-guard contract the runner sets for retrieving methods lives in
`veracity.retrieval.guards`, so that methods never import from evaluation.
"""
