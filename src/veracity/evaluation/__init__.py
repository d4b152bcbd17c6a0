"""Evaluation: run a method over a benchmark and measure it.

- `runner`: `veracity eval` — async, resumable runs into a run directory.
- `store`: the run directory (config, predictions, metrics, usage, caches).
- `metrics`: accuracy, F1, confusion, abstention/error rates, calibration, usage.
- `report`, `plots`: `veracity report` (Markdown and self-contained HTML).
- `compare`: `veracity compare` with paired bootstrap intervals.
- `experiment`: experiment configs with variants and the papers' reported numbers.
- `guards`: the leakage-guard contract that retrieving methods apply to their queries.

This package imports nothing heavy on purpose: methods import `guards` from here.
"""
