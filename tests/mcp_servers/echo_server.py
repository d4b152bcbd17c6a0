"""A tiny external MCP server for tests (stdio), written with the official SDK.

Tools: ``lookup`` (a fixed fact table), ``crash`` (the process exits at once, to test
restarts), ``slow`` (sleeps longer than a client's timeout). A marker file given as the
first argument gets one line (the process id) each time the server starts.
"""

import os
import sys
import time
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

FACTS = {
    "eiffel tower": "The Eiffel Tower stands on the Champ de Mars in Paris, France.",
    "berlin": "Berlin is the capital and largest city of Germany.",
}

app = MCPServer("facts")


@app.tool(description="Look up a short fact about a landmark or city.")
def lookup(topic: Annotated[str, Field(min_length=1, description="the landmark or city")]) -> str:
    return FACTS.get(topic.strip().lower(), f"no fact known about {topic!r}")


@app.tool(description="Ends the server process (for restart tests).")
def crash() -> str:
    os._exit(3)


@app.tool(description="Takes a long time (for timeout tests).")
def slow(seconds: float = 5.0) -> str:
    time.sleep(seconds)
    return "done"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        with open(sys.argv[1], "a", encoding="utf-8") as marker:
            marker.write(f"{os.getpid()}\n")
    app.run()
