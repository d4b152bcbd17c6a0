"""Tools an agent calls: local tools over the evidence layer, and tools from MCP servers.

- `base`: the `Tool` protocol, `Observation`, `SourceTool`;
- `evidence`: the evidence layer as tools (search, Wikipedia browsing, page fetch);
- `schema`: argument models from remote tools' JSON input schemas;
- `mcp_client`: `McpToolset`, the tools of MCP servers (stdio or streamable HTTP).
"""

from veracity.tools.base import (
    Observation,
    SearchInput,
    SourceTool,
    Tool,
    failure,
    render_documents,
    tool_spec,
)
from veracity.tools.evidence import SOURCE_HINTS, evidence_tools, tool_name

__all__ = [
    "SOURCE_HINTS",
    "Observation",
    "SearchInput",
    "SourceTool",
    "Tool",
    "evidence_tools",
    "failure",
    "render_documents",
    "tool_name",
    "tool_spec",
]
