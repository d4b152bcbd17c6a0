"""Re-make docs/ui.png: the web UI after a RADAR check, on a scripted model.

Run from the repository root: python docs/screenshot.py  (needs Debian's chromium and
the dev extra). The model is scripted, so the picture shows the UI, not a real verdict.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from PIL import Image  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402
from server_support import CLAIM, live_server, run_config  # noqa: E402

from veracity.testing.radar import ScriptedRound, radar_script  # noqa: E402

ARGUMENTS = {
    "politician": "The auction records from 2012 show the medal was sold for charity, "
    "and the proceeds went to a children's fund, so the claim holds.",
    "scientist": "The passages confirm a 2012 charity sale, but none says the money "
    "went only to Ukrainian children; the claim may overstate it.",
}


def main() -> None:
    overrides = [
        (lambda r, role=role: r.tag.startswith(f"{role}:"), text, None)
        for role, text in ARGUMENTS.items()
    ]
    plans = {"Klitschko": [ScriptedRound("HALF-TRUE", 0.6, 0.2), ScriptedRound("TRUE", 0.9, 0.9)]}
    llm = radar_script(plans, overrides=overrides)
    out = ROOT / "docs" / "ui.png"
    with (
        live_server(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/veracity-shot"), llm,
                    config=run_config("radar")) as (server, _),
        sync_playwright() as p,
    ):  # fmt: skip
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        page = browser.new_page(viewport={"width": 900, "height": 1300})
        page.goto(server.url + "/")
        page.get_by_label("Claim to check").fill(CLAIM)
        page.get_by_label("Method").select_option("radar")
        page.get_by_role("button", name="Check").click()
        page.locator("#verdict-label").wait_for()
        page.locator("#debate").scroll_into_view_if_needed()
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(out))
        browser.close()
    image = Image.open(out).convert("RGB").quantize(colors=64)
    image.save(out, optimize=True)
    print(f"wrote {out} ({out.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    main()
