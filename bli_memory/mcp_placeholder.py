"""A stand-in MCP server, standard library only, for when the real one cannot run yet.

The plugin's MCP server lacks the `mcp` SDK on a first session (`mcp_sdk.py` is fetching it), or
the machine is not paired with a door yet. A server that exits leaves the agent with a failed server
and no reason; a silent one looks broken.
This one answers the MCP handshake over stdio (newline-delimited JSON-RPC 2.0), puts the reason in
its instructions, and offers one tool, `memory_status`, whose description and answer say what is
missing, what the plugin is doing about it and what to run.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from bli_memory import __version__

SERVER_NAME = "bli-memory"
TOOL_NAME = "memory_status"
#: answered when the client names none; otherwise the client's own version is echoed
PROTOCOL_VERSION = "2025-06-18"
METHOD_NOT_FOUND = -32601


def unpaired_text(entry: str) -> str:
    """What the plugin's server says before this machine is paired; `entry` is the file the plugin's
    launcher ran (lib/bli_memory_mcp.py), beside which the launcher lives."""
    launcher = os.path.normpath(
        os.path.join(os.path.dirname(os.path.abspath(entry)), "..", "bin", "bli-memory")
    )
    return (
        "bli-memory is installed, but this machine is not paired with a memory door yet, so nothing is "
        "recalled or saved. For a door on this machine, run `scripts/quickstart` in a clone of the "
        "bli-memory repository (it starts a door and pairs you); for your team's door, run "
        f"`{launcher} login --url URL --token-stdin` with the token from that door's "
        "`bli-memory-door pair --person NAME`. Then start a new session."
    )


def _answer(message: str, request: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON-RPC response to one request, or None for a notification."""
    method = request.get("method")
    if "id" not in request:
        return None
    result: dict[str, Any]
    if method == "initialize":
        params = request.get("params") or {}
        result = {
            "protocolVersion": params.get("protocolVersion") or PROTOCOL_VERSION,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": SERVER_NAME, "version": __version__},
            "instructions": message,
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        tool = {
            "name": TOOL_NAME,
            "description": "Why bli-memory's memory tools are not available yet: " + message,
            "inputSchema": {"type": "object", "properties": {}},
        }
        result = {"tools": [tool]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": message}], "isError": True}
    else:
        error = {"code": METHOD_NOT_FOUND, "message": f"{method}: not available ({message})"}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def serve(message: str) -> int:
    """Answer MCP requests on stdin until it closes; `message` is what every answer explains."""
    sys.stderr.write(f"bli-memory-mcp: {message}\n")
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if not isinstance(request, dict):
            continue
        response = _answer(message, request)
        if response is not None:
            sys.stdout.write(json.dumps(response) + "\n")
            sys.stdout.flush()
    return 0
