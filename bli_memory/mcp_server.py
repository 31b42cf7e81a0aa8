"""The MCP stdio server (`bli-memory-mcp` with no arguments): the memory tools over JSON-RPC.

The tools themselves live in `tools.py`; this module only wraps them in the `mcp` SDK's low-level
server over stdio. The SDK costs ~650 ms to import, and cold start is what a user waits for, so it is
imported inside `_serve` and nowhere else.

stdout carries JSON-RPC only: every operational line goes to stderr. Door calls are blocking socket
I/O, so they run in a worker thread, one at a time (the keep-alive connection is not shared).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from bli_memory import render
from bli_memory.settings import load_settings, unpaired_message
from bli_memory.tools import TOOLS, DoorUrlError, MemoryTools, open_tools, project_dir

SERVER_NAME = "bli-memory"

SERVER_INSTRUCTIONS = (
    "Long-term memory for this project: durable facts, decisions and context saved in earlier sessions. "
    "Search it before answering questions about past work; save what a future session should know; "
    "update a memory when a fact changes; forget one that is wrong. When a recall clearly helped, misled "
    "or got in the way, record it with memory_experience."
)


USAGE = """usage: bli-memory-mcp

Runs the BLI Memory MCP server on stdio (JSON-RPC on stdout, operational lines on stderr).
Tools: search_memory, save_memory, update_memory, forget_memory, list_memories, recent_memories,
memory_experience.
The door and token come from ~/.config/bli-cockpit/session.json or BLI_MEMORY_DEVICE_TOKEN /
BLI_MEMORY_DASHBOARD_URL; BLI_MEMORY_CONTAINER_TAG forces the space.
"""


def main(argv: list[str]) -> int:
    """Serve MCP on stdio until stdin closes. Unpaired: one sentence on stderr, exit 1 (as the
    plugin's server: the placeholder, which says how to pair)."""
    if argv and argv[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0
    if argv:
        sys.stderr.write(f"bli-memory-mcp: the MCP server takes no arguments (got {argv[0]!r}); see --help\n")
        return 2
    settings = load_settings()
    if not settings.paired:
        sys.stderr.write(unpaired_message() + "\n")
        from bli_memory.mcp_sdk import plugin_data_dir

        if plugin_data_dir(os.environ) is not None:
            # run by the plugin, installed before any pairing: a server that exits shows as failed
            # with no reason, so the placeholder tells the agent what to run instead
            from bli_memory.mcp_placeholder import serve, unpaired_text

            return serve(unpaired_text(sys.argv[0]))
        return 1
    try:
        tools = open_tools(settings, project_dir(os.environ))
    except DoorUrlError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    sys.stderr.write(f"bli-memory: MCP server on stdio, door {render.display_url(settings.door_url)}\n")
    try:
        _serve(tools)
    except KeyboardInterrupt:
        pass
    finally:
        tools.close()
    return 0


def _serve(tools: MemoryTools) -> None:
    """Run the SDK's low-level server over stdio; both handshake eras are the SDK's to negotiate."""
    import anyio
    import anyio.to_thread
    import mcp.types as types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from bli_memory import __version__

    listed = types.ListToolsResult(
        tools=[
            types.Tool(
                name=spec.name,
                title=spec.title,
                description=spec.description,
                input_schema=spec.input_schema,
                output_schema=spec.output_schema,
                annotations=types.ToolAnnotations.model_validate(spec.annotations),
            )
            for spec in TOOLS
        ]
    )
    door_calls = anyio.CapacityLimiter(1)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listed

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = await anyio.to_thread.run_sync(
            tools.call, params.name, params.arguments or {}, limiter=door_calls
        )
        # A failure carries text only: an output schema binds successful results, and Claude Code
        # forwards structuredContent instead of text when both are present.
        return types.CallToolResult(
            content=[types.TextContent(text=result.text)],
            structured_content=None if result.is_error else result.structured,
            is_error=result.is_error,
        )

    server: Server[Any] = Server(
        SERVER_NAME,
        version=__version__,
        title="BLI Memory",
        instructions=SERVER_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
