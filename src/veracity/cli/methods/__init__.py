"""The command-line front ends of single methods: commands and `check`/`eval` flags that
one method adds (RADAR's ``calibrate radar``, ToE's ``train toe`` and ``advfact``,
MERMAID's ``--memory``).

Each module comes in through the ``veracity.commands`` and ``veracity.run_options`` entry
points (pyproject.toml), read by `veracity.cli.plugins` exactly as an installed package's
would be, and nothing imports it (the import contract: ``.importlinter``). Here, above the
machinery, a method's front end may use the command line's helpers, the evaluation
runner and the runtime without an import running back up from ``veracity.methods``; it
reaches into its own method's package only.
"""
