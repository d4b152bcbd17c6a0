"""Guards on the project itself: CI runs the README's test command."""

from pathlib import Path

ROOT = Path(__file__).parents[2]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks = text.split("```bash\n")[1:]
    return [b.split("\n```", 1)[0].strip() for b in blocks]


def test_ci_runs_the_readme_test_command():
    commands = _readme_commands()
    test_cmd = next(c for c in commands if c.endswith("pytest"))
    ci_lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_cmd in ci_lines  # the README's command, verbatim, as one line of CI
    # after it, only the rerun of the data-dependent tests without a data directory
    after = [ln for ln in ci_lines[ci_lines.index(test_cmd) + 1 :] if ln and ln[0] != "#"]
    assert [ln for ln in after if not ln.startswith("echo ")] == [
        "env -u VERACITY_DATA_DIR pytest -m data -q -p no:cacheprovider"
    ]


def test_readme_main_command_checks_a_claim_on_the_default():
    commands = _readme_commands()
    assert commands[0].startswith("python3 -m venv") and "veracity check" in commands[0]
    installs = [c for c in commands if c.startswith("python3 -m venv")]
    # the core needs no torch (issue 41); the dev extra includes the torch extra, whose
    # CPU wheel is installed first so that pip does not fetch the CUDA build
    assert "torch" not in commands[0] and "pip install -e . &&" in commands[0]
    dev = [c for c in installs if '".[dev]"' in c]
    assert dev and all("pip install torch==2.13.0 && pip install -e" in c for c in dev)
