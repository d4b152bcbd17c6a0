"""Real headless Chromium for the browser tests (Debian's `chromium`, no browser download)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("VERACITY_CHROMIUM", "/usr/bin/chromium")
TIMEOUT_MS = 30_000


def chromium():
    """Chromium, launched (a fixture's body: `browser = pytest.fixture(scope="module")(chromium)`
    in a test module); skips, saying how to install it, where there is none."""
    if not Path(CHROMIUM).exists() and not shutil.which(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield b
        b.close()
