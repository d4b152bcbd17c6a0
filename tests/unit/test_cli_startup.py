"""Start-up stays light: help and `import veracity` load none of the heavy packages.

Each case runs in a fresh interpreter and lists which of the heavy packages ended up in
`sys.modules`; the figures themselves are in benchmarks/startup.py.
"""

import json
import subprocess
import sys

import pytest

# (pydantic is not listed: typer itself imports it to read option types)
HEAVY = {
    "numpy", "scipy", "torch", "bm25s", "sentence_transformers", "httpx", "jinja2",
    "pydantic_settings", "yaml", "xllamacpp", "markdown_it", "sklearn",
    "fastapi", "uvicorn",
}  # fmt: skip

PROBE = """
import json, sys
argv = json.loads(sys.argv[1])
if argv is None:
    import veracity
else:
    from veracity.cli import main
    sys.argv = ["veracity", *argv]
    try:
        main()
    except SystemExit:
        pass
loaded = sorted({m.split(".")[0] for m in sys.modules})
sys.stderr.write("\\nLOADED " + json.dumps(loaded) + "\\n")
"""


def loaded_after(argv):
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True, text=True, timeout=60
    )
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("LOADED ")]
    assert line, proc.stderr
    return set(json.loads(line[-1].removeprefix("LOADED ")))


@pytest.mark.parametrize(
    "argv",
    [
        None,
        ["--help"],
        ["check", "--help"],
        ["eval", "--help"],
        ["batch", "--help"],
        ["index", "search", "--help"],
        ["calibrate", "radar", "--help"],
        ["models", "--help"],
        ["serve", "--help"],
        ["train", "toe", "--help"],
        ["advfact", "build", "--help"],
    ],
)
def test_help_and_import_load_no_heavy_package(argv):
    heavy = loaded_after(argv) & HEAVY
    assert not heavy, f"{argv}: {sorted(heavy)}"


def test_import_veracity_loads_nothing_of_its_own_until_used():
    import veracity

    assert veracity.Claim(text="x").text == "x"
    assert callable(veracity.check) and "check" in dir(veracity)
    assert set(veracity.__all__) <= set(dir(veracity))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        veracity.nope  # noqa: B018
