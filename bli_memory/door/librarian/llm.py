"""The LLM extractor: an HTTP client for an OpenAI-compatible chat endpoint, with the deterministic fallback.

Unlike the rest of the librarian this does I/O: it posts the exchange through `wire/http.py` under one
absolute deadline. Its prompt states the deterministic extractor's contract, and its facts pass the
same rules afterwards (:func:`~bli_memory.door.librarian.lasting.breaks_contract`).
:func:`extractor_for` picks it when configured and falls back to
:func:`~bli_memory.door.librarian.extract.extract_facts` on any failure.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any, Literal

from bli_memory.door.config import LlmConfig
from bli_memory.door.librarian.extract import MAX_FACT_CHARS, MAX_FACTS_PER_TEXT, extract_facts
from bli_memory.door.librarian.lasting import breaks_contract
from bli_memory.door.librarian.words import fact_key

LLM_TIMEOUT_S = 20.0
#: the exchange sent to the model is cut here so a huge paste cannot run up the bill or the context.
LLM_MAX_INPUT_CHARS = 24_000
#: the endpoint's answer is capped so a broken peer cannot exhaust memory.
LLM_RESPONSE_CAP_BYTES = 1024 * 1024

ExtractorName = Literal["llm", "deterministic"]


class LibrarianError(Exception):
    """The LLM extractor could not produce facts (unreachable, slow, HTTP error, bad answer)."""


LLM_SYSTEM_PROMPT = f"""You extract durable memory from one exchange between a developer (User) and a coding agent
(Assistant). Return ONLY a JSON object of the form {{"facts": ["...", "..."]}} and nothing else.
Keep what stays true after this session: decisions, conventions, preferences and corrections the user
states (a decision stated inside a request is still a decision: keep it, without the request), commands,
file paths, versions, configuration, owners, fixes and their causes.
Leave out: questions (never restate the user's question as a fact), greetings and thanks, plans ("let me
check"), one-off tasks, problem reports, test runs and their counts ("6 passed", "all tests pass"), tool
output, log lines, stack traces, code listings, and general knowledge that is not about this project.
Each fact is one impersonal sentence that makes sense on its own a month later: never "I", "me" or
"my" (write "`x==1` is pinned", not "I pinned `x==1`"); name the subject instead of "it", "this" or
"they", and when the exchange does not say what a pronoun means, leave that sentence out rather than
guess; team decisions may say "We" ("We use ..."). Copy identifiers, paths, commands, versions and
values byte for byte, in backticks when they are code. A correction starts with "Correction:".
At most {MAX_FACTS_PER_TEXT} facts, each under {MAX_FACT_CHARS} characters. If nothing is worth
remembering, return {{"facts": []}}.
Facts that break these rules are discarded after you answer."""


def chat_url(base_url: str) -> str:
    """`{base}/v1/chat/completions` (`{base}/chat/completions` when the base already ends in /v1)."""
    base = base_url.rstrip("/")
    return base + "/chat/completions" if base.endswith("/v1") else base + "/v1/chat/completions"


def _strip_fence(content: str) -> str:
    """Models often wrap JSON in a ```json fence despite being told not to; the shape stays strict."""
    content = content.strip()
    if content.startswith("```"):
        content = content.split("\n", 1)[1] if "\n" in content else ""
        content = content.rsplit("```", 1)[0]
    return content.strip()


def _validated_facts(payload: Any) -> list[str]:
    """The ``facts`` of an answer, cleaned, deduplicated, held to the contract and capped.

    LibrarianError if the answer is malformed, or if it offered facts and every one broke the
    contract (:func:`~bli_memory.door.librarian.lasting.breaks_contract`: a question, the first
    person, a test run, a log line, a greeting, a pronoun leaning on words before it): a model that
    ignores its instructions is not trusted with the exchange, and the deterministic extractor runs.
    A fact that breaks the contract among good ones is dropped alone.
    """
    if not isinstance(payload, dict) or not isinstance(payload.get("facts"), list):
        raise LibrarianError('chat endpoint answer is not {"facts": [...]}')
    facts: list[str] = []
    seen: set[str] = set()
    broken: list[str] = []
    for item in payload["facts"]:
        if not isinstance(item, str):
            raise LibrarianError("chat endpoint answered a fact that is not a string")
        fact = re.sub(r"\s+", " ", item).strip()
        key = fact_key(fact)
        if not fact or len(fact) > MAX_FACT_CHARS or key in seen:
            continue
        seen.add(key)
        reason = breaks_contract(fact)
        if reason is not None:
            broken.append(reason)
            continue
        facts.append(fact)
    if broken and not facts:
        raise LibrarianError(
            f"every fact the chat endpoint answered broke the contract ({', '.join(broken)})"
        )
    return facts[:MAX_FACTS_PER_TEXT]


def post_chat(url: str, body: dict[str, Any], api_key: str | None, timeout_s: float) -> bytes:
    """POST `body` to a chat endpoint; the whole exchange (connect, send, every byte of the answer)
    within `timeout_s`, or LibrarianError. Shared by the extractor and the door's question rewrite.

    The door's own HTTP client (`wire/http.py`) keeps one absolute deadline; urllib's timeout is
    per socket operation, so an endpoint that trickled its answer could hold a job for ever.
    """
    from bli_memory.wire.http import BadResponse, Connection, WireError, WireTimeout

    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    deadline = time.monotonic() + timeout_s
    try:
        with Connection(url) as connection:
            response = connection.request(
                "POST",
                url,
                body=json.dumps(body).encode("utf-8"),
                headers=headers,
                deadline=deadline,
                max_body_bytes=LLM_RESPONSE_CAP_BYTES,
            )
    except WireTimeout:
        raise LibrarianError(f"chat endpoint gave no answer within {timeout_s:g}s") from None
    except BadResponse as exc:  # not HTTP, or over the size cap
        raise LibrarianError(f"chat endpoint answered badly: {exc}") from None
    except WireError as exc:
        raise LibrarianError(f"chat endpoint unreachable: {exc.reason}") from None
    except ValueError as exc:  # a base URL that cannot be used
        raise LibrarianError(f"chat endpoint unreachable: {type(exc).__name__}") from None
    if response.status >= 300:
        raise LibrarianError(f"chat endpoint answered HTTP {response.status}")
    return response.body


class LlmExtractor:
    """Facts from an OpenAI-compatible ``POST {base_url}/v1/chat/completions``.

    The answer must be ``{"facts": [string, ...]}`` (a surrounding ```json fence is tolerated);
    anything else, an HTTP error, an unreachable endpoint or no whole answer within ``timeout_s``
    raises :class:`LibrarianError`. The key travels only in the ``Authorization``
    header and never appears in an error.
    """

    def __init__(
        self, base_url: str, model: str, api_key: str | None = None, timeout_s: float = LLM_TIMEOUT_S
    ) -> None:
        self._url = chat_url(base_url)
        self._model = model
        self._api_key = api_key
        self._timeout_s = timeout_s

    def _post(self, body: dict[str, Any]) -> bytes:
        return post_chat(self._url, body, self._api_key, self._timeout_s)

    def extract(self, text: str) -> list[str]:
        """Ask the model for facts; raises LibrarianError on any failure."""
        body = {
            "model": self._model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": LLM_SYSTEM_PROMPT},
                {"role": "user", "content": text[:LLM_MAX_INPUT_CHARS]},
            ],
        }
        raw = self._post(body)
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LibrarianError("chat endpoint answered malformed JSON") from None
        if not isinstance(content, str):
            raise LibrarianError("chat endpoint answered no message content")
        try:
            payload = json.loads(_strip_fence(content))
        except ValueError:
            raise LibrarianError("chat endpoint answered content that is not JSON") from None
        return _validated_facts(payload)


def extractor_for(
    config: LlmConfig,
    *,
    on_fallback: Callable[[str], None] | None = None,
) -> Callable[[str], tuple[list[str], ExtractorName]]:
    """The extractor the door's worker should run: ``text -> (facts, "llm" | "deterministic")``.

    The LLM runs when the chat endpoint is configured (``config.configured``: its URL and model;
    the key is optional); any :class:`LibrarianError` falls back to :func:`extract_facts` and, when
    given, ``on_fallback`` hears the one-line reason (never the key).
    """
    if not config.configured:

        def deterministic(text: str) -> tuple[list[str], ExtractorName]:
            return extract_facts(text), "deterministic"

        return deterministic
    llm = LlmExtractor(config.url, config.model, api_key=config.key)

    def with_fallback(text: str) -> tuple[list[str], ExtractorName]:
        started = time.monotonic()
        try:
            return llm.extract(text), "llm"
        except LibrarianError as exc:
            if on_fallback is not None:
                on_fallback(
                    f"{exc} after {time.monotonic() - started:.1f}s; used the deterministic extractor"
                )
            return extract_facts(text), "deterministic"

    return with_fallback
