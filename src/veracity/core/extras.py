"""How to add one of veracity's optional extras (``server``, ``ray``) to this installation.

The right pip command depends on how veracity was installed: a source checkout installed
in editable mode (``pip install -e .``, as the README's quickstart does) takes the extra
with ``pip install -e ".[server]"`` run in the checkout, while a package installed from an
index takes ``pip install "veracity[server]"``. pip records how it installed a package in
the distribution's ``direct_url.json`` (PEP 610), which `installation` reads; every message
about a missing extra builds its command with `install_command`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

DISTRIBUTION = "veracity"


@dataclass(frozen=True)
class Installation:
    """How veracity was installed.

    Attributes:
        checkout: the local folder it was installed from (a source checkout), or None for
            a package from an index, an archive or a VCS URL.
        editable: whether that folder is installed in editable mode (``pip install -e``).
    """

    checkout: Path | None = None
    editable: bool = False


def installation(dist: metadata.Distribution | None = None) -> Installation:
    """How `dist` (default: the installed veracity) was installed, from its
    ``direct_url.json``. Code run from a source tree that pip never installed (e.g. with
    ``PYTHONPATH=src``) counts as an editable checkout of that tree."""
    if dist is None:
        try:
            dist = metadata.distribution(DISTRIBUTION)
        except metadata.PackageNotFoundError:
            return _source_tree()
    try:
        info = json.loads(dist.read_text("direct_url.json") or "null")
    except (OSError, ValueError):
        return Installation()
    if not isinstance(info, dict) or not isinstance(info.get("dir_info"), dict):
        return Installation()
    url = info.get("url")
    if not isinstance(url, str) or urlparse(url).scheme != "file":
        return Installation()
    folder = Path(url2pathname(urlparse(url).path))
    return Installation(checkout=folder, editable=info["dir_info"].get("editable") is True)


def _source_tree() -> Installation:
    root = Path(__file__).resolve().parents[3]  # src/veracity/core/extras.py -> the checkout
    if (root / "pyproject.toml").is_file():
        return Installation(checkout=root, editable=True)
    return Installation()


def install_command(
    extra: str | None, how: Installation | None = None, *, cwd: Path | None = None
) -> str:
    """The pip command that adds `extra` to this installation of veracity.

    Args:
        extra: the extra's name, e.g. ``server`` or ``ray``; None installs veracity with its
            own dependencies again.
        how: how veracity was installed (default: `installation()`).
        cwd: the folder the command will run in (default: the current one); a checkout
            elsewhere is named by its path.

    Returns:
        e.g. ``pip install "veracity[ray]"`` or, in a checkout, ``pip install -e ".[ray]"``.
    """
    how = installation() if how is None else how
    target = DISTRIBUTION
    if how.checkout is not None:
        try:
            here = (Path.cwd() if cwd is None else cwd).resolve()
            inside = here == how.checkout.resolve()
        except OSError:
            inside = False
        target = "." if inside else str(how.checkout)
    spec = f"{target}[{extra}]" if extra else target
    if "[" in spec or any(c.isspace() for c in spec):
        spec = f'"{spec}"'  # brackets are a glob to the shell
    return f"pip install {'-e ' if how.checkout is not None and how.editable else ''}{spec}"


__all__ = ["Installation", "install_command", "installation"]
