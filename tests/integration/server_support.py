"""Helpers for the server tests: a live server on loopback with a scripted model, a
memory source registered as a plugin would be, and a model that waits for a gate."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from gated import GatedLLM  # noqa: F401  (re-exported for the server tests)
from veracity.core import registry
from veracity.core.config import RunConfig
from veracity.core.types import Document
from veracity.llm.base import LLMRequest
from veracity.server import BackgroundServer, ServerSettings, create_app
from veracity.testing import InMemorySource, ScriptedLLM
from veracity.testing.radar import ScriptedRound, radar_script

CLAIM = "Klitschko auctioned his Olympic medal to help Ukrainian children"
DOCS = [
    Document(
        id=f"d{i}",
        title=f"Auction report {i}",
        url=f"https://news.example/klitschko-{i}",
        text=f"In 2012 Klitschko sold his Olympic gold medal at a charity auction; note {i}.",
        published_at=dt.datetime(2012, 5, 1),
        source="memory",
    )
    for i in range(4)
]
COT_REPLY = '{"reasoning": "The tower stands in Paris, not Berlin.", "label": "false"}'


def memory_source(name: str = "memory") -> InMemorySource:
    return InMemorySource(DOCS, name=name)


if "memory" not in registry.sources:
    registry.sources.register("memory", memory_source)


def radar_llm(latency_s: float = 0.0) -> ScriptedLLM:
    plans = {"Klitschko": [ScriptedRound("TRUE", 0.6, 0.2), ScriptedRound("TRUE", 0.9, 0.9)]}
    llm = radar_script(plans)
    llm.latency_s = latency_s
    return llm


def cot_llm(latency_s: float = 0.0) -> ScriptedLLM:
    return ScriptedLLM(default=COT_REPLY, latency_s=latency_s)


def run_config(method: str = "cot", **extra: Any) -> RunConfig:
    return RunConfig(method=method, sources={"memory": {"type": "memory"}}, **extra)


@contextlib.contextmanager
def live_server(
    data_dir: Path, llm: Any, *, config: RunConfig | None = None, **settings: Any
) -> Iterator[tuple[BackgroundServer, httpx.Client]]:
    """A real server on 127.0.0.1 and a client for it."""
    opts = {"rate_per_minute": 0, **settings}
    app = create_app(
        ServerSettings(data_dir=data_dir, **opts), run_config=config or run_config(), llm=llm
    )
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        yield server, client


def sse_events(client: httpx.Client, job_id: str, **headers: str) -> list[dict[str, Any]]:
    """Every event of a job's stream (until `end`), as {id, event, data}."""
    out: list[dict[str, Any]] = []
    with client.stream("GET", f"/v1/checks/{job_id}/events", headers=headers) as resp:
        assert resp.status_code == 200, resp.read()
        assert resp.headers["content-type"].startswith("text/event-stream")
        out.extend(parse_sse(resp.iter_lines()))
    return out


def parse_sse(lines: Any) -> Iterator[dict[str, Any]]:
    import json

    current: dict[str, Any] = {}
    for line in lines:
        if not line:
            if current:
                yield current
                if current.get("event") == "end":
                    return
            current = {}
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(": ")
        if field == "data":
            current["data"] = json.loads(value)
        elif field == "id":
            current["id"] = int(value)
        else:
            current[field] = value


def wait_status(client: httpx.Client, job_id: str, *want: str, timeout_s: float = 30) -> dict:
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        job = client.get(f"/v1/checks/{job_id}").json()
        if job["status"] in want:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} stayed {job['status']}, wanted {want}")
        time.sleep(0.02)


# --------------------------------------------------------------------------- S2MAD script

THREAD = {
    "Saw the smoke from my window.": 0.9,
    "The fire service posted about it.": 0.7,
    "This photo is from a drill last year.": -0.9,
    "Nothing about it on the local news.": -0.5,
}
POST = "The old library on Main Street is on fire."


def s2mad_llm(latency_s: float = 0.0) -> ScriptedLLM:
    """Scores replies by their text (THREAD), says the post is objective, both debaters
    argue 'Fake' every round."""
    import json
    import re

    llm = ScriptedLLM(latency_s=latency_s)

    def score(request: LLMRequest) -> str:
        items = re.findall(
            r'^<reply id="(c\d+)">\n(.*)\n</reply>$', request.messages[-1].content, re.M
        )
        scored = [{"id": i, "reason": "scripted", "score": THREAD.get(t, 0.0)} for i, t in items]
        return json.dumps({"scores": scored})

    def argue(request: LLMRequest) -> str:
        speaker, round_no = request.tag.split(":")[0], request.tag.split(":")[2]
        return json.dumps(
            {"argument": f"{speaker} in round {round_no} doubts it", "stance": "Fake"}
        )

    llm.on(".", score, tag="stance")
    llm.on(".", json.dumps({"answer": "No"}), tag="subjectivity")
    llm.on(".", argue, tag="agent_p")
    llm.on(".", argue, tag="agent_n")
    llm.on(".", json.dumps({"reason": "both doubt it", "verdict": "Fake"}), tag="judge")
    return llm


# --------------------------------------------------------------------------- plugin method

from veracity.core.context import CheckContext  # noqa: E402
from veracity.core.types import CheckInput, Evidence, Stance, Verdict  # noqa: E402
from veracity.llm.base import user  # noqa: E402
from veracity.methods.base import BaseMethod  # noqa: E402
from veracity.retrieval.base import Query  # noqa: E402

QUOTE = "sold his Olympic gold medal"


class ShowcaseMethod(BaseMethod):
    """A third-party-style method that records a trajectory, tool calls, an argument tree
    and a quoted span: the UI must show them without knowing this method."""

    name = "showcase"
    input_kinds = ("claim",)
    description = "test plugin that records every kind of trace event"

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        docs = await self.sources["memory"].search(Query(text=item.content))
        reply = await self.llm.complete(LLMRequest(messages=[user(item.content)], tag="showcase"))
        ctx.event(
            "agent_turn", "planner", step=1, thought="find the auction record",
            action="search", input="Klitschko medal auction", observation=docs[0].text,
        )  # fmt: skip
        ctx.event("tool_call", "planner", tool="search", arguments={"q": "Klitschko medal"})
        ctx.event("tree_node", "toe", node_id="root", claim=item.content, iteration=0)
        ctx.event(
            "tree_node", "toe", node_id="a1", parent_id="root", claim="He sold the medal",
            veracity=0.9, reliability=0.8, status="supported", iteration=1,
        )  # fmt: skip
        ctx.event("tree_node", "toe", node_id="root", veracity=0.85, status="resolved")
        ctx.event("memory_recall", "memory", action="recall", entities=["Klitschko"], hits=2)
        evidence = Evidence(
            document=docs[0], quote=QUOTE, stance=Stance.SUPPORTS, quote_verified=True
        )
        return self.verdict(
            label="true", score=0.9, confidence=0.8, rationale=reply.text, evidence=[evidence]
        )


if "showcase" not in registry.methods:
    registry.methods.register("showcase", ShowcaseMethod)
