"""The documentation site builds in strict mode, and the README stays a front door.

`mkdocs build --strict` is the gate: with the `validation:` settings in mkdocs.yml, a link
to a missing page, a link to a missing heading and a page left out of the navigation are
warnings, and strict mode turns warnings into a failed build. The second test plants one
of each in a copy of the site and checks that the build fails naming all three, so the
gate itself cannot quietly stop working. Nothing here touches the network: Material's
fonts are off and no plugin fetches anything.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_README_LINES = 250


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _nav_pages(nav) -> list[str]:
    pages = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages.extend(_nav_pages(value) if isinstance(value, list) else [value])
    return pages


def _config() -> dict:
    # mkdocs.yml holds no custom tags; plain YAML reads it
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))


def test_the_site_builds_in_strict_mode_with_every_page(tmp_path):
    site = tmp_path / "site"
    result = _build(ROOT / "mkdocs.yml", site)
    assert result.returncode == 0, result.stderr[-4000:]
    config = _config()
    assert config["theme"]["font"] is False  # no Google fonts: the site reads offline
    for page in _nav_pages(config["nav"]):
        built = site / (page.removesuffix(".md") + "/index.html").removeprefix("index/")
        assert built.is_file(), f"{page} was not built"
    # every method package's README is a page of the site, reached from the method table
    readmes = sorted(p.parent.name for p in (ROOT / "src/veracity/methods").glob("*/README.md"))
    assert len(readmes) >= 20
    for name in readmes:
        assert (site / "methods" / name / "index.html").is_file(), name
    table = (site / "method-table" / "index.html").read_text(encoding="utf-8")
    assert 'href="../methods/radar/"' in table
    assert (site / "ui.png").is_file() and (site / "img" / "document-view.png").is_file()
    for html in site.rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, html


def test_a_broken_link_a_broken_anchor_or_a_page_off_the_nav_fails_the_build(tmp_path):
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    for readme in (ROOT / "src/veracity/methods").glob("*/README.md"):
        target = tmp_path / readme.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(readme, target)
    install = tmp_path / "docs" / "install.md"
    install.write_text(
        install.read_text(encoding="utf-8")
        + "\nSee [the lost page](no-such-page.md) and [a heading](checking.md#no-such-heading).\n",
        encoding="utf-8",
    )
    (tmp_path / "docs" / "orphan.md").write_text("# Not in the navigation\n", encoding="utf-8")
    result = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    log = result.stderr
    assert "no-such-page.md" in log
    assert "no-such-heading" in log
    assert "orphan.md" in log


def test_the_readme_is_a_short_front_door_whose_links_resolve():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and t[0] != "#"]
    assert len(local) >= 10
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README links to missing files: {missing}"
    # the README sends readers to the site's pages
    nav = set(_nav_pages(_config()["nav"]))
    linked_pages = {t.removeprefix("docs/") for t in local if re.match(r"docs/.*\.md$", t)}
    assert {"install.md", "checking.md", "documents.md", "evaluation.md"} <= linked_pages
    nav |= {"methods.md"}  # the method guide: docs/hooks.py puts it in the nav when present
    assert linked_pages <= nav, f"README links to pages off the site: {linked_pages - nav}"


def test_every_registered_method_is_in_the_method_table():
    table = (ROOT / "docs" / "method-table.md").read_text(encoding="utf-8")
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    listed = {name for row in rows for name in re.findall(r"`([a-z0-9_]+)`", row.split("|")[1])}
    registered = {ep.name for ep in entry_points(group="veracity.methods")}
    assert registered, "no methods registered: is veracity installed?"
    assert registered <= listed, f"methods missing from docs/method-table.md: {registered - listed}"
