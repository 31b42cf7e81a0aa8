"""A recorded stand-in for the chat model of the door's question rewrite, for the evaluations.

No model runs on the machines this project is measured on, so the evaluations measure the rewrite's
plumbing (`bli_memory.door.rewrite`: which queries are rewritten, both searches, the fusion) with a
deterministic rule in the model's place: `statement_for` drops a question's scaffolding (the question
word, a following "many/much/long/often/old/far", one auxiliary verb, the question mark) and keeps the
rest as a statement: "When did Caroline go to the LGBTQ support group?" becomes "Caroline go to the
LGBTQ support group." A real model also writes the words of a likely answer, which this rule cannot:
its numbers are a floor for what the plumbing adds, not a measurement of a model.

`rule_post` plugs the rule into `QuestionRewriter` in-process (scripts/eval_locomo.py);
`serving_rule` serves it over HTTP as an OpenAI-compatible endpoint for a real door
(scripts/eval_capture.py), answering any other request (the librarian's extraction) HTTP 500, so the
librarian falls back to its deterministic extractor exactly as it runs without an endpoint.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bli_memory.door.rewrite import REWRITE_SYSTEM_PROMPT

QUESTION_WORDS = frozenset("what when where who whom whose which why how".split())
AFTER_HOW = frozenset("many much long often old far".split())
AUXILIARIES = frozenset("did does do is are was were has have had can could will would should".split())


def statement_for(question: str) -> str:
    """The rule: the question without its scaffolding, as a sentence (the question itself when
    nothing is left)."""
    words = question.strip().rstrip("?").strip().split()
    index = 0
    if words and words[0].lower() in QUESTION_WORDS:
        index = 1
        if words[0].lower() == "how" and len(words) > 1 and words[1].lower() in AFTER_HOW:
            index = 2
    if index < len(words) and words[index].lower() in AUXILIARIES:
        index += 1
    rest = words[index:]
    if not rest:
        return question
    text = " ".join(rest)
    return text[0].upper() + text[1:] + "."


def completion(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()


def rule_post(url: str, body: dict[str, Any], api_key: str | None, timeout_s: float) -> bytes:
    """`QuestionRewriter`'s `post`, answered by the rule instead of a model."""
    return completion(statement_for(str(body["messages"][-1]["content"])))


@contextmanager
def serving_rule() -> Iterator[str]:
    """The rule as a chat endpoint on a loopback port; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            messages = body.get("messages") or [{}]
            if messages[0].get("content") == REWRITE_SYSTEM_PROMPT:
                status, data = 200, rule_post("", body, None, 0.0)
            else:  # the librarian's extraction: no model here, it runs its deterministic extractor
                status, data = 500, b'{"error": "stand-in rewrites questions only"}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
