"""The foundation every other layer stands on, in two tiers.

Lowest (import nothing else of veracity): `errors`, `infra`, `dates`, `readers`, `textio`,
`redaction`, `untrusted`, `extras`, `weblinks`, `storage`, `dirlock`, `netguard`.
Above them: data models and accounting (`types`, `trace`, `usage`, `labels`, `limits`),
settings and registries (`config`, `registry`, `context`), saved trained parts
(`checkpoints`) and the papers' transcribed tables (`paper_table`).
"""
