"""The `veracity` command line. Each built-in command group lives in its own module here
and registers itself on `app` when imported; commands that belong to one method live in
`veracity.cli.methods` and come in through the ``veracity.commands`` entry points, as an
installed package's would (`veracity.cli.plugins`)."""

from __future__ import annotations

from veracity.cli import batch as _batch  # noqa: F401
from veracity.cli import check as _check  # noqa: F401  (registers commands)
from veracity.cli import datasets as _datasets  # noqa: F401
from veracity.cli import datasets_get as _datasets_get  # noqa: F401  (after datasets)
from veracity.cli import doctor as _doctor  # noqa: F401
from veracity.cli import eval as _eval  # noqa: F401
from veracity.cli import index as _index  # noqa: F401
from veracity.cli import mcp as _mcp  # noqa: F401
from veracity.cli import models as _models  # noqa: F401
from veracity.cli import runs as _runs  # noqa: F401
from veracity.cli import serve as _serve  # noqa: F401
from veracity.cli.app import PROCESS, app, console, fail  # noqa: F401


def main() -> None:
    PROCESS["owned"] = True
    app()


__all__ = ["app", "main"]
