"""The foundation the layers above stand on, in two tiers: a module lives here only when
parts of more than one layer use it (one that serves a single part lives in that part:
the directory lock in `veracity.evaluation.dirlock`, saved trained parts in
`veracity.methods.checkpoints`).

Lowest (import nothing else of veracity): `errors`, `infra`, `dates`, `readers`, `textio`,
`redaction`, `untrusted`, `extras`, `weblinks`, `storage`, `netguard`, `paths`, `bounds`.
Above them: data models and accounting (`types`, `trace`, `usage`, `labels`, `limits`),
settings and registries (`config`, `registry`, `context`) and the papers' transcribed
tables (`paper_table`, part of a run config).
"""
