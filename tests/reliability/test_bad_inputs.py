"""Bad inputs through the command line and the Python API (issue items 6 and 8).

Each case is classified: handled with a clear error (exit 2 or 3 and an ``error:`` line
on the CLI; a typed veracity error or TypeError from the API), crashed (a traceback or
an unexpected exception) or silently wrong (accepted where it must be refused, or a cut
that is not recorded). Goal: 0 crashed, 0 silently wrong.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import veracity
from veracity.cli import app
from veracity.core.config import RunConfig
from veracity.core.errors import ConfigError, InputError
from veracity.core.types import MAX_INPUT_CHARS
from veracity.runtime import layered_config
from veracity.testing import ScriptedLLM

from .tally import Tally

runner = CliRunner()
NESTED = "[" * 5000 + "]" * 5000


def _files(tmp: Path) -> dict[str, Path]:
    tmp.mkdir(parents=True, exist_ok=True)
    made = {
        "binary.bin": bytes(range(256)) * 8,
        "latin1.txt": "Caf\u00e9 prices doubled".encode("latin-1"),
        "huge.txt": b"word " * (MAX_INPUT_CHARS // 4),
        "nested.json": NESTED.encode(),
        "bigint.json": b'{"text": "x", "id": ' + b"9" * 6000 + b"}",
        "list.json": b"[1, 2, 3]",
        "unknown_key.json": b'{"text": "x", "colour": "red"}',
        "tweet.json": b'{"kind": "tweet", "text": "x"}',
        "nul.json": b'{"text": "a\\u0000b"}',
        "long_reply.json": json.dumps(
            {"kind": "post", "text": "p", "replies": [{"id": "r", "text": "y" * 5_000_000}]}
        ).encode(),
        "long_speaker.json": json.dumps({"text": "x", "speaker": "s" * 1_000_000}).encode(),
        "long_title.json": json.dumps(
            {"kind": "article", "body": "b", "title": "t" * 300_000}
        ).encode(),
        "cycle.json": json.dumps(
            {
                "kind": "post",
                "id": "p",
                "text": "t",
                "replies": [
                    {"id": "a", "text": "x", "parent": "b"},
                    {"id": "b", "text": "y", "parent": "a"},
                ],
            }
        ).encode(),
        "bad.yaml": b"method: [unclosed",
        "unknown.yaml": b"methd: direct\n",
        "negative.yaml": b"method: cot\nmethod_config: {max_tokens: -5}\n",
        "nan.yaml": b"method: cot\nmethod_config: {temperature: .nan}\n",
    }
    for name, data in made.items():
        (tmp / name).write_bytes(data)
    found = {name: tmp / name for name in made}
    row = "\t".join(["1.json", "true", "x", "t", "s", "j", "st", "p", *"00000", "c"])
    for name, data in {
        "latin1_data": row.replace("x", "caf\u00e9").encode("latin-1"),
        "columns_data": b"1.json\ttrue\tonly three columns\n",
    }.items():
        (tmp / name / "liar").mkdir(parents=True)
        (tmp / name / "liar" / "train.tsv").write_bytes(data + b"\n")
        found[name] = tmp / name
    scifact = tmp / "nested_data" / "scifact"
    scifact.mkdir(parents=True)
    (scifact / "claims_train.jsonl").write_bytes(NESTED.encode() + b"\n")
    (scifact / "corpus.jsonl").write_bytes(b'{"doc_id": 1, "title": "t", "abstract": ["a"]}\n')
    found["nested_data"] = tmp / "nested_data"
    return found


def cli_cases(f: dict[str, Path]) -> list[tuple[str, list[str], bytes | None]]:
    """(name, argv, stdin) of inputs that must end in a clear error."""
    return [
        ("empty text", ["check", ""], None),
        ("blank text", ["check", "   \n "], None),
        ("no input", ["check"], None),
        ("text and --file", ["check", "x", "--file", str(f["list.json"])], None),
        ("missing file", ["check", "--file", "/nonexistent/claim.txt"], None),
        ("binary file", ["check", "--file", str(f["binary.bin"])], None),
        ("latin-1 file", ["check", "--file", str(f["latin1.txt"])], None),
        ("over 200,000 characters", ["check", "--file", str(f["huge.txt"])], None),
        ("invalid UTF-8 on stdin", ["check", "-"], b"The moon \xff\xfe is cheese"),
        ("binary on stdin", ["check", "-"], bytes(range(1, 256)) * 4),
        ("undecodable argv", ["check", "abc\udcff"], None),
        ("JSON nested 5000 deep", ["check", "--file", str(f["nested.json"])], None),
        ("JSON integer of 6000 digits", ["check", "--file", str(f["bigint.json"])], None),
        ("JSON list", ["check", "--file", str(f["list.json"])], None),
        ("JSON unknown key", ["check", "--file", str(f["unknown_key.json"])], None),
        ("JSON kind tweet", ["check", "--file", str(f["tweet.json"])], None),
        ("JSON text with NUL", ["check", "--file", str(f["nul.json"])], None),
        ("reply of 5 MB", ["check", "--file", str(f["long_reply.json"]), "--kind", "post"], None),
        ("speaker of 1 MB", ["check", "--file", str(f["long_speaker.json"])], None),
        ("title of 300,000 chars", ["check", "--file", str(f["long_title.json"])], None),
        ("reply cycle", ["check", "--file", str(f["cycle.json"]), "--kind", "post"], None),
        ("--kind tweet", ["check", "x", "--kind", "tweet"], None),
        ("--method nope", ["check", "x", "--method", "nope"], None),
        ("--labels nope", ["check", "x", "--labels", "nope"], None),
        ("--model nope (embedded)", ["check", "x", "--model", "nope"], None),
        ("--source with no name", ["check", "x", "--source", "=web"], None),
        ("--source bad argument", ["check", "x", "--source", "w=wikipedia:x"], None),
        ("--config missing", ["check", "x", "--config", "/nonexistent.yaml"], None),
        ("--config bad YAML", ["check", "x", "--config", str(f["bad.yaml"])], None),
        ("--config unknown key", ["check", "x", "--config", str(f["unknown.yaml"])], None),
        ("max_tokens: -5", ["check", "x", "--config", str(f["negative.yaml"])], None),
        ("temperature: nan", ["check", "x", "--config", str(f["nan.yaml"])], None),
        ("--variant without --config", ["check", "x", "--variant", "v"], None),
        ("eval --model nope", ["eval", "--dataset", "liar", "--model", "nope"], None),
        ("eval unknown dataset", ["eval", "--dataset", "nope", "--method", "direct"], None),
        ("eval --concurrency 0", ["eval", "--dataset", "liar", "--concurrency", "0"], None),
        (
            "dataset file in Latin-1",
            ["eval", "--dataset", "liar", "--split", "train", "--data-dir", str(f["latin1_data"])],
            None,
        ),
        (
            "dataset row of 3 columns",
            ["eval", "--dataset", "liar", "--split", "train", "--data-dir", str(f["columns_data"])],
            None,
        ),
        (
            "dataset JSON nested 5000 deep",
            [
                "eval",
                "--dataset",
                "scifact",
                "--split",
                "train",
                "--data-dir",
                str(f["nested_data"]),
            ],
            None,
        ),
        ("eval --limit -3", ["eval", "--dataset", "liar", "--limit", "-3"], None),
    ]


def test_bad_inputs_on_the_command_line_get_clear_errors(tmp_path, capsys):
    tally = Tally()
    for name, args, stdin in cli_cases(_files(tmp_path / "in")):
        tally.tried += 1
        if args[0] == "eval":
            args = [*args, "--out", str(tmp_path / "runs" / str(tally.tried)), "--no-progress"]
        result = runner.invoke(app, args, input=stdin)
        text = result.output
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            tally.crashed.append(f"{name}: {type(result.exception).__name__}: {result.exception}")
        elif result.exit_code in (2, 3) and "error" in text.lower() and "Traceback" not in text:
            tally.clear += 1
        else:
            tally.silent.append(f"{name}: exit {result.exit_code}: {text[-200:]}")
    with capsys.disabled():
        print("\n" + tally.line("CLI bad inputs"))
    assert tally.crashed == [] and tally.silent == []


def api_cases() -> list[tuple[str, object, dict]]:
    deep: dict = {"text": "x"}
    node = deep
    for _ in range(200):
        node["metadata"] = {}
        node = node["metadata"]
    return [
        ("bytes", b"x", {}),
        ("None", None, {}),
        ("a number", 42, {}),
        ("empty text", "", {}),
        ("undecodable text", "abc\udcff", {}),
        ("text with NUL", "a\x00b", {}),
        ("kind tweet", "x", {"kind": "tweet"}),
        ("mapping kind tweet", {"kind": "tweet", "text": "x"}, {}),
        ("mapping nested 200 deep", deep, {}),
        ("speaker of 1 MB", {"text": "x", "speaker": "s" * 1_000_000}, {}),
        (
            "reply of 5 MB",
            {"kind": "post", "text": "p", "replies": [{"id": "r", "text": "y" * 5_000_000}]},
            {},
        ),
        (
            "25,000 replies",
            {
                "kind": "post",
                "text": "p",
                "replies": [{"id": f"r{i}", "text": "y"} for i in range(25_000)],
            },
            {},
        ),
        ("unknown method", "x", {"method": "nope"}),
        ("unknown labels", "x", {"labels": "nope"}),
        ("max_tokens -5", "x", {"config": {"max_tokens": -5}}),
        ("unknown config key", "x", {"config": {"max_tokenz": 5}}),
        ("missing run config", "x", {"run_config": "/nonexistent.yaml"}),
    ]


def test_bad_inputs_through_the_python_api_get_clear_errors(capsys):
    llm = ScriptedLLM(default='{"label": "true"}')
    tally = Tally()
    for name, item, kwargs in api_cases():
        tally.tried += 1
        try:
            veracity.check(item, llm=llm, **kwargs)
        except (InputError, ConfigError, TypeError) as exc:
            tally.clear += int(bool(str(exc)))
        except Exception as exc:
            tally.crashed.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
        else:
            tally.silent.append(f"{name}: accepted")
    with capsys.disabled():
        print("\n" + tally.line("Python API bad inputs"))
    assert tally.crashed == [] and tally.silent == []


def test_many_replies_are_capped_and_the_cut_recorded():
    llm = ScriptedLLM(default='{"label": "true"}')
    post = {"kind": "post", "text": "p", "replies": [
        {"id": f"r{i}", "text": f"reply {i} " + "z" * 3000} for i in range(10_000)]}  # fmt: skip
    verdict = veracity.check(post, llm=llm, config={"max_input_chars": 500})
    cuts = {c["field"]: c for c in verdict.metadata["input_cuts"]}
    assert cuts["post.replies"] == {"field": "post.replies", "total": 10_000, "kept": 200,
                                    "unit": "replies"}  # fmt: skip
    assert "reply[r0].text" in cuts and verdict.usage.llm_calls == 1
    # the run's limits cut to 200 replies; the method's prompt then shows the first 10
    assert [e.name for e in verdict.trace.of_kind("note")] == ["input_limits", "input_cut"]
    prompt = llm.calls[0].messages[-1].content
    assert len(prompt) < 30_000 and "later replies not shown" in prompt


def test_a_claim_is_cut_to_the_models_budget_and_says_what_was_cut():
    from veracity.llm.base import Capabilities

    llm = ScriptedLLM(default='{"label": "true"}', capabilities=Capabilities(context_window=2048))
    claim = "The council said " + "and then it said more " * 2000
    verdict = veracity.check(claim, llm=llm)
    (cut,) = verdict.metadata["input_cuts"]
    assert cut["field"] == "claim.text" and cut["total"] == len(claim)
    assert cut["kept"] <= 2048 * 0.5 * 3 + 40
    assert "characters cut]" in llm.calls[0].messages[-1].content


def test_limits_are_configurable_in_the_run_config():
    llm = ScriptedLLM(default='{"label": "true"}')
    run_config = RunConfig(limits={"max_replies": 3, "reply_chars": 20})
    post = {"kind": "post", "text": "p", "replies": [
        {"id": f"r{i}", "text": "a long reply " * 5} for i in range(5)]}  # fmt: skip
    verdict = veracity.check(post, llm=llm, run_config=run_config)
    fields = [c["field"] for c in verdict.metadata["input_cuts"]]
    assert fields[0] == "post.replies" and len(fields) == 4


@pytest.mark.parametrize("bad", [{"max_replies": -1}, {"reply_chars": 0}, {"nope": 1}])
def test_bad_limits_are_config_errors(bad):
    with pytest.raises(ConfigError):
        layered_config(flags={"limits": bad})


def rest_cases() -> list[tuple[str, bytes]]:
    """(name, raw JSON body) of submissions that must be refused with a problem body."""

    def body(item: dict, **extra: object) -> bytes:
        return json.dumps({"input": item, **extra}).encode()

    # fmt: off
    return [
        ("kind tweet", body({"kind": "tweet", "text": "x"})),
        ("empty text", body({"kind": "claim", "text": ""})),
        ("text with NUL", body({"kind": "claim", "text": "a\u0000b"})),
        ("lone surrogate", b'{"input": {"kind": "claim", "text": "a\\ud800b"}}'),
        ("invalid UTF-8 body", b'{"input": {"kind": "claim", "text": "a\xff\xfeb"}}'),
        ("JSON nested 5000 deep", b'{"input": ' + NESTED.encode() + b"}"),
        ("JSON integer of 6000 digits", b'{"input": {"kind": "claim", "text": "x", "id": '
         + b"9" * 6000 + b"}}"),
        ("NaN literal", b'{"input": {"kind": "claim", "text": NaN}}'),
        ("speaker of 300,000 chars", body({"kind": "claim", "text": "x", "speaker": "s" * 3**12})),
        ("25,000 replies", body({"kind": "post", "text": "p", "replies": [
            {"id": f"r{i}", "text": "y"} for i in range(25_000)]})),
        ("reply cycle", body({"kind": "post", "id": "p", "text": "t", "replies": [
            {"id": "a", "text": "x", "parent": "b"}, {"id": "b", "text": "y", "parent": "a"}]})),
        ("binary text", body({"kind": "claim", "text": "".join(map(chr, range(1, 32))) * 20})),
        ("unknown method", body({"kind": "claim", "text": "x"}, method="nope")),
        ("unknown labels", body({"kind": "claim", "text": "x"}, labels="nope")),
        ("method_config not allowed", body({"kind": "claim", "text": "x"},
                                           method_config={"max_tokens": -5})),
        ("unknown top-level key", body({"kind": "claim", "text": "x"}, colour="red")),
    ]
    # fmt: on


@pytest.mark.server
def test_bad_inputs_through_the_rest_api_get_problem_bodies(tmp_path, capsys):
    httpx = pytest.importorskip("httpx")
    server_mod = pytest.importorskip("veracity.server")
    llm = ScriptedLLM(default='{"label": "true"}')
    settings = server_mod.ServerSettings(
        data_dir=tmp_path, rate_per_minute=0, max_body_bytes=3_000_000
    )
    app = server_mod.create_app(settings, run_config=RunConfig(), llm=llm)
    tally = Tally()
    with (
        server_mod.BackgroundServer(app) as server,
        httpx.Client(base_url=server.url, timeout=60) as client,
    ):
        for name, raw in rest_cases():
            tally.tried += 1
            try:
                resp = client.post(
                    "/v1/checks", content=raw, headers={"content-type": "application/json"}
                )
            except httpx.HTTPError as exc:
                tally.crashed.append(f"{name}: {type(exc).__name__}")
                continue
            if resp.status_code >= 500:
                tally.crashed.append(f"{name}: HTTP {resp.status_code} {resp.text[:200]}")
            elif 400 <= resp.status_code < 500 and resp.json().get("detail"):
                tally.clear += 1
            else:
                tally.silent.append(f"{name}: HTTP {resp.status_code} {resp.text[:200]}")
        healthy = client.get("/healthz").status_code
    with capsys.disabled():
        print("\n" + tally.line("REST bad inputs"))
    assert healthy == 200
    assert tally.crashed == [] and tally.silent == []
