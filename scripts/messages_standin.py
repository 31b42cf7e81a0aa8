"""A loopback stand-in for the Anthropic Messages API (and OpenAI's Responses API, for Codex) that answers
every message with a scripted reply and records what the host sent (scripts/eval_reach.py and
tests/test_eval_reach.py).

A real Claude Code pointed at it (ANTHROPIC_BASE_URL) runs its turn as it would against the real API:
its hooks fire, the prompt hook's block and the session-start block go into the request, the reply
goes into the transcript and the Stop hook saves it. No model runs: the reply is whatever the caller
set with `reply()` before the turn, so the transcript holds exactly the exchange being replayed.

`POST /v1/messages` is answered as a server-sent event stream when the request asks for `stream:
true` (message_start, one text block, message_delta with `end_turn`, message_stop), else as one JSON
message; `POST /v1/messages/count_tokens` with a rough count; `POST /v1/responses` (Codex, with a model
provider whose base URL is the stand-in's `/v1`) as a Responses event stream of one assistant message
(response.created, response.output_item.done, response.completed); anything else with 404. Every request,
whatever its path, is recorded: its method, path and decoded JSON body (the `x-api-key` and
`authorization` headers are never kept).
"""

from __future__ import annotations

import http.server
import json
import threading
from dataclasses import dataclass, field
from typing import Any

MODEL_ECHO = "standin-model"
#: a rough token count for count_tokens: characters per token of English text
CHARS_PER_TOKEN = 4


@dataclass
class Recorded:
    """One request as the stand-in got it."""

    method: str
    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        """Every string in the body (system prompt, messages, system reminders), joined: what the model
        would have read."""
        return "\n".join(_strings(self.body))

    def is_turn(self, prompt: str) -> bool:
        """A messages request whose last user message holds `prompt`: the turn's own call, not a side
        call the host makes (a title, a quota probe)."""
        if "count_tokens" in self.path or not self.path.startswith(("/v1/messages", "/v1/responses")):
            return False
        key = "input" if self.path.startswith("/v1/responses") else "messages"
        messages = self.body.get(key) if isinstance(self.body, dict) else None
        if not isinstance(messages, list) or not messages:
            return False
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        return bool(users) and prompt in "\n".join(_strings(users[-1]))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def stream_events(reply: str, message_id: str) -> bytes:
    """The whole event stream of a one-text-block message."""
    usage = {"input_tokens": 1, "output_tokens": 1}
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": MODEL_ECHO,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return b"".join(
        [
            _sse("message_start", {"type": "message_start", "message": message}),
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": reply}},
            ),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": max(1, len(reply) // CHARS_PER_TOKEN)},
                },
            ),
            _sse("message_stop", {"type": "message_stop"}),
        ]
    )


def response_events(reply: str, response_id: str) -> bytes:
    """The event stream of an OpenAI Responses API answer of one assistant message (what Codex reads)."""
    item = {
        "type": "message",
        "role": "assistant",
        "id": f"msg_{response_id}",
        "content": [{"type": "output_text", "text": reply}],
    }
    usage = {
        "input_tokens": 1,
        "input_tokens_details": None,
        "output_tokens": 1,
        "output_tokens_details": None,
        "total_tokens": 2,
    }
    return b"".join(
        [
            _sse("response.created", {"type": "response.created", "response": {"id": response_id}}),
            _sse("response.output_item.done", {"type": "response.output_item.done", "item": item}),
            _sse(
                "response.completed",
                {"type": "response.completed", "response": {"id": response_id, "usage": usage}},
            ),
        ]
    )


def whole_message(reply: str, message_id: str) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": MODEL_ECHO,
        "content": [{"type": "text", "text": reply}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": max(1, len(reply) // CHARS_PER_TOKEN)},
    }


class MessagesStandIn:
    """The stand-in on 127.0.0.1 (a free port); `url` is what ANTHROPIC_BASE_URL takes."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._reply = "OK."
        self._lock = threading.Lock()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _record(self, body: Any) -> None:
                headers = {
                    k.lower(): v
                    for k, v in self.headers.items()
                    if k.lower() not in ("x-api-key", "authorization")
                }
                with owner._lock:
                    owner.requests.append(Recorded(self.command, self.path, body, headers))

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._record(None)
                self._send(
                    404,
                    b'{"type":"error","error":{"type":"not_found_error","message":"stand-in"}}',
                    "application/json",
                )

            def do_CONNECT(self) -> None:
                """A tunnel asked of us as a proxy (HTTPS_PROXY points here): a host beyond loopback that
                the host tried to reach; recorded, refused."""
                self._record(None)
                self._send(403, b"", "text/plain")

            def do_HEAD(self) -> None:
                self._record(None)
                self._send(200, b"", "text/plain")

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                self._record(body)
                path = self.path.split("?", 1)[0]
                if path.endswith("/count_tokens"):
                    count = max(1, len(json.dumps(body)) // CHARS_PER_TOKEN)
                    self._send(200, json.dumps({"input_tokens": count}).encode(), "application/json")
                    return
                if path.endswith("/v1/responses"):
                    with owner._lock:
                        reply, response_id = owner._reply, f"resp_standin_{len(owner.requests)}"
                    self._send(200, response_events(reply, response_id), "text/event-stream")
                    return
                if not path.endswith("/v1/messages"):
                    self._send(
                        404,
                        b'{"type":"error","error":{"type":"not_found_error","message":"stand-in"}}',
                        "application/json",
                    )
                    return
                with owner._lock:
                    reply, message_id = owner._reply, f"msg_standin_{len(owner.requests)}"
                if isinstance(body, dict) and body.get("stream"):
                    self._send(200, stream_events(reply, message_id), "text/event-stream")
                else:
                    self._send(200, json.dumps(whole_message(reply, message_id)).encode(), "application/json")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def reply(self, text: str) -> None:
        """What every message is answered with from now on."""
        with self._lock:
            self._reply = text

    def since(self, start: int) -> list[Recorded]:
        with self._lock:
            return list(self.requests[start:])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
