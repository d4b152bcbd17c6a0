"""Model Context Protocol front ends (official `mcp` SDK), beside the CLI and REST server.

- `server`: veracity as an MCP server (``veracity mcp``): check, search_evidence,
  list_methods, list_sources;
- `tool_server`: the evidence layer as MCP tools (``veracity mcp tools``), which
  MERMAID's executor launches over stdio;
- `transport`: stdio and streamable HTTP (127.0.0.1, optional bearer token).

The client side (agents calling MCP tools) is `veracity.tools.mcp_client`, below the
methods that use it.
"""
