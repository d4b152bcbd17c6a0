"""MkDocs hooks for this site (named in mkdocs.yml; run at build time, offline).

Each method package keeps its README beside its code (``src/veracity/methods/<name>/``),
where GitHub shows it and the code's reviewers see it. These hooks publish those files as
pages of the site without copying them into ``docs/``:

- ``on_config`` adds a "Method READMEs" section to the navigation, one page per package
  that has a README, and puts ``docs/methods.md`` (the method guide) into the "Methods"
  section when that page exists and the navigation does not name it yet;
- ``on_files`` adds each README as the virtual page ``methods/<name>.md``;
- ``on_page_markdown`` turns a link to ``…src/veracity/methods/<name>/README.md`` (the
  repository path, which is what works on GitHub) into a link to that page, so a page
  may link either way and ``mkdocs build --strict`` still checks the target.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

SECTION = "Method READMEs"
GUIDE = "methods.md"
README_LINK = re.compile(
    r"\]\((?:\.\./|\./)*(?:src/veracity/methods/)([a-z0-9_]+)/README\.md(#[^)\s]*)?\)"
)


def _readmes(config) -> dict[str, Path]:
    root = Path(config.config_file_path).resolve().parent
    return {
        path.parent.name: path
        for path in sorted((root / "src" / "veracity" / "methods").glob("*/README.md"))
    }


def _title(path: Path, name: str) -> str:
    first = path.read_text(encoding="utf-8").splitlines()[:1]
    heading = first[0].lstrip("#").strip() if first and first[0].startswith("# ") else ""
    return heading.split(" — ")[0].removesuffix(" in veracity") or name


def on_config(config):
    nav = config.nav or []
    readmes = _readmes(config)
    pages = [{_title(path, name): f"methods/{name}.md"} for name, path in readmes.items()]
    nav = [entry for entry in nav if not (isinstance(entry, dict) and SECTION in entry)]
    nav.append({SECTION: pages})
    guide = Path(config.docs_dir) / GUIDE
    if guide.is_file() and GUIDE not in repr(nav):
        for entry in nav:
            if isinstance(entry, dict) and isinstance(entry.get("Methods"), list):
                entry["Methods"].insert(0, {"Method guide": GUIDE})
                break
        else:
            nav.append({"Method guide": GUIDE})
    config.nav = nav
    return config


def on_files(files, config):
    for name, path in _readmes(config).items():
        uri = f"methods/{name}.md"
        if files.get_file_from_path(uri) is not None:
            raise ValueError(f"docs/{uri} would hide {path}; remove one of them")
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files):
    here = posixpath.dirname(page.file.src_uri)

    def to_page(match: re.Match) -> str:
        target = posixpath.relpath(f"methods/{match.group(1)}.md", here or ".")
        return f"]({target}{match.group(2) or ''})"

    return README_LINK.sub(to_page, markdown)
