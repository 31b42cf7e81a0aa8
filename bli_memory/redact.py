"""Mask secrets in text before it leaves the machine (the Stop hook saves a redacted exchange).

Strategy. Detectors find *spans* of secret material in the original text; spans are merged and
each merged span is replaced by a typed mask ``[REDACTED:<kind>]``, so the structure around a
secret survives (``ghp_[REDACTED:github_token]``, ``postgres://user:[REDACTED:password]@host``,
PEM BEGIN/END lines, quotes, keys). Two tiers:

- *Anchored* detectors (vendor prefixes, PEM private keys, JWTs, webhook URLs) know the exact
  shape of a secret. Each one *claims* the whole token, prefix included, and masks the part after
  the vendor prefix.
- *Context* detectors (Authorization-style headers, URL userinfo, keyword assignments, CLI
  flags) decide from the surroundings. Their spans give way to claims, so a GitHub token behind
  ``password=`` keeps its typed mask.

Linear time on hostile input. Python's ``re`` has no timeout, so every pattern is built to fail
fast: a literal first (the engine's prefix search) or a charset gate, bounded quantifiers where a
failure would backtrack, unbounded runs only where nothing after them can fail. Scans over a value
are never repeated (see ``_KeywordScanner``) and PEM BEGIN/END markers are paired in one pass.
Patterns compile lazily on first use, and a detector whose literal does not occur in the text
never runs, which keeps both the import and the common case cheap on the hook path.

Only the standard library is used. How a found value is judged (placeholder, reference, opaque
token) and how a key is classified live in ``redact_judge.py``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator

from bli_memory.redact_judge import (
    MASK_MARK,
    PASSWORD_MIN_CHARS,
    SECRET_MIN_CHARS,
    VALUE_SAMPLE_CHARS,
    classify_key,
    compiled_patterns,
    is_opaque,
    is_password_placeholder,
    is_placeholder,
    line_tail,
    mask_kind,
    rx,
    value_ok,
)
from bli_memory.scan_text import SECRET_HEADER_NAMES, ascii_lower, at_token_start, at_word_start

__all__ = ["MASK_FORMAT", "Redaction", "redact"]

MASK_FORMAT = "[REDACTED:{kind}]"

# Bounds (characters) on how far a detector looks; the mask itself always covers the whole value.
KEY_MAX_CHARS = 64
QUOTED_VALUE_MAX_CHARS = 2048
VERDICT_MEMO_ENTRIES = 1024  # per call: repeated values (hostile input) are judged once


class Redaction:
    """The redacted text, how many masks were applied, and how many of each kind.

    A plain class, not a dataclass: `dataclasses` imports `inspect`, 10-50 ms of every hook that
    redacts (the Stop hook, a prompt that may hold a secret)."""

    __slots__ = ("kinds", "masked", "text")

    def __init__(self, text: str, masked: int = 0, kinds: dict[str, int] | None = None) -> None:
        self.text = text
        self.masked = masked
        self.kinds = {} if kinds is None else kinds

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Redaction):
            return NotImplemented
        return (self.text, self.masked, self.kinds) == (other.text, other.masked, other.kinds)

    __hash__ = None  # type: ignore[assignment]  # mutable kinds: like a dataclass with eq, unhashable

    def __repr__(self) -> str:
        return f"Redaction(text={self.text!r}, masked={self.masked!r}, kinds={self.kinds!r})"


_Span = tuple[int, int, str]  # start, end, kind
_Spans = list[_Span]
_Claims = list[tuple[int, int]]

_state = {"warm": False}


# --------------------------------------------------------------------------------------------
# Anchored detectors: vendor prefixes
# --------------------------------------------------------------------------------------------

# (kind, literals that must occur for the rule to run, pattern). The group ``b`` is masked; what
# precedes it in the match is the vendor prefix, which is kept. Every pattern starts with a
# literal (fast prefix search); the left boundary is checked in Python (``scan_text.at_token_start``).
_PREFIX_RULES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # Our own device token: ``bli_`` + ``secrets.token_urlsafe(32)`` (43 URL-safe base64 characters).
    # It must hold an upper- and a lower-case letter (a random token lacks one with odds of about
    # 1e-10), so a snake_case or CONSTANT_CASE identifier of the same length (``bli_memory_…``) is
    # left alone.
    (
        "bli_token",
        ("bli_",),
        r"bli_(?=[\w-]{0,42}[A-Z])(?=[\w-]{0,42}[a-z])(?P<b>[\w-]{43})(?![\w-])",
    ),
    (
        "aws_access_key",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])(?P<b>[A-Z0-9]{16})(?![A-Za-z0-9])",
    ),
    ("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_(?P<b>[A-Za-z0-9_]{36,})"),
    ("github_token", ("github_pat_",), r"github_pat_(?P<b>\w{40,})"),
    ("gitlab_token", ("gl",), r"gl(?:pat|dt|rt|ptt|ft|imt|oas|cbt|soat|ffct|agent)-(?P<b>[\w-]{20,})"),
    ("anthropic_key", ("sk-ant-",), r"sk-ant-(?:api|admin|oat|ort|sid)\d\d-(?P<b>[\w-]{32,})"),
    (
        "openai_key",
        ("sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-"),
        r"sk-(?:proj|svcacct|admin|None)-(?P<b>[\w-]{40,})",
    ),
    ("openai_key", ("T3BlbkFJ",), r"sk-(?P<b>[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20,})"),
    ("openrouter_key", ("sk-or-",), r"sk-or-v\d-(?P<b>[\w-]{32,})"),
    ("langfuse_key", ("sk-lf-",), r"sk-lf-(?P<b>[\w-]{20,})"),
    ("api_key", ("sk-",), r"sk-(?P<b>[A-Za-z0-9]{32,})(?![\w-])"),
    ("google_api_key", ("AIza",), r"AIza(?P<b>[\w-]{35})(?![\w-])"),
    ("google_oauth_secret", ("GOCSPX-",), r"GOCSPX-(?P<b>[\w-]{20,})"),
    ("google_oauth_token", ("ya29.",), r"ya29\.(?P<b>[\w-]{20,})"),
    ("slack_token", ("xox",), r"xox[abposre]-(?P<b>[A-Za-z0-9-]{10,})"),
    ("slack_token", ("xapp-",), r"xapp-(?P<b>[A-Za-z0-9-]{10,})"),
    (
        "slack_webhook",
        ("hooks.slack.com",),
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<b>[A-Za-z0-9/_-]{20,})",
    ),
    ("discord_webhook", ("discord",), r"discord(?:app)?\.com/api/webhooks/(?P<b>\d{5,30}/[\w-]{20,})"),
    ("stripe_key", ("sk_live_", "sk_test_"), r"sk_(?:live|test)_(?P<b>[A-Za-z0-9]{20,})"),
    ("stripe_key", ("rk_live_", "rk_test_"), r"rk_(?:live|test)_(?P<b>[A-Za-z0-9]{20,})"),
    ("stripe_webhook_secret", ("whsec_",), r"whsec_(?P<b>[A-Za-z0-9+/=]{24,})"),
    ("twilio_key", ("SK",), r"SK(?P<b>[0-9a-f]{32})(?![0-9A-Za-z])"),
    ("sendgrid_key", ("SG.",), r"SG\.(?P<b>[\w-]{16,32}\.[\w-]{20,})"),
    ("mailgun_key", ("key-",), r"key-(?P<b>[0-9a-f]{32})(?![0-9A-Za-z])"),
    ("npm_token", ("npm_",), r"npm_(?P<b>[A-Za-z0-9]{36})(?![A-Za-z0-9])"),
    ("pypi_token", ("pypi-AgEIcHlwaS5vcmc",), r"pypi-(?P<b>AgEIcHlwaS5vcmc[\w-]{30,})"),
    ("huggingface_token", ("hf_",), r"hf_(?P<b>[A-Za-z0-9]{30,40})(?![\w])"),
    ("groq_key", ("gsk_",), r"gsk_(?P<b>[A-Za-z0-9]{40,})"),
    ("xai_key", ("xai-",), r"xai-(?P<b>[A-Za-z0-9]{40,})"),
    ("replicate_token", ("r8_",), r"r8_(?P<b>[A-Za-z0-9]{30,})"),
    ("perplexity_key", ("pplx-",), r"pplx-(?P<b>[A-Za-z0-9]{40,})"),
    ("langsmith_key", ("lsv2_",), r"lsv2_(?:pt|sk)_(?P<b>[A-Za-z0-9_]{30,})"),
    ("tavily_key", ("tvly-",), r"tvly-(?P<b>[\w-]{20,})"),
    ("pinecone_key", ("pcsk_",), r"pcsk_(?P<b>\w{40,})"),
    ("fireworks_key", ("fw_",), r"fw_(?P<b>[A-Za-z0-9]{20,})(?![\w])"),
    ("databricks_token", ("dapi",), r"dapi(?P<b>[a-f0-9]{32}(?:-\d)?)(?![A-Za-z0-9])"),
    ("digitalocean_token", ("_v1_",), r"do[opr]_v1_(?P<b>[A-Za-z0-9]{40,})"),
    ("heroku_key", ("HRKU-",), r"HRKU-(?P<b>AA[\w-]{30,})"),
    ("shopify_token", ("shp",), r"shp(?:at|ss|ca|pa)_(?P<b>[A-Za-z0-9]{32,})"),
    ("linear_key", ("lin_api_",), r"lin_api_(?P<b>[A-Za-z0-9]{30,})"),
    ("notion_token", ("ntn_",), r"ntn_(?P<b>[A-Za-z0-9]{40,})"),
    ("notion_token", ("secret_",), r"secret_(?P<b>[A-Za-z0-9]{43})(?![\w])"),
    ("doppler_token", ("dp.",), r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?P<b>[A-Za-z0-9]{40,})"),
    ("vault_token", ("hvs.", "hvb."), r"hv[sb]\.(?P<b>[\w-]{24,})"),
    ("pulumi_token", ("pul-",), r"pul-(?P<b>[a-f0-9]{40})"),
    ("postman_key", ("PMAK-",), r"PMAK-(?P<b>[A-Za-z0-9-]{40,})"),
    ("sentry_token", ("sntry",), r"sntry[us]_(?P<b>[\w=+/-]{40,})"),
    ("grafana_token", ("glsa_", "glc_"), r"gl(?:sa|c)_(?P<b>[A-Za-z0-9_+/=]{30,})"),
    ("atlassian_token", ("ATATT3",), r"ATATT3(?P<b>[\w=-]{50,})"),
    ("newrelic_key", ("NRAK-",), r"NRAK-(?P<b>[A-Z0-9]{20,})"),
    ("age_secret_key", ("AGE-SECRET-KEY-1",), r"AGE-SECRET-KEY-1(?P<b>[0-9A-Z]{50,})"),
    ("onepassword_token", ("ops_eyJ",), r"ops_(?P<b>eyJ[A-Za-z0-9+/=]{50,})"),
    ("supabase_token", ("sbp_", "sb_secret_"), r"(?:sbp_|sb_secret_)(?P<b>[\w-]{30,})"),
    ("flyio_token", ("fo1_",), r"fo1_(?P<b>[\w-]{30,})"),
    ("e2b_key", ("e2b_",), r"e2b_(?P<b>[a-f0-9]{40})"),
)

# A JWT is three ``[\w-]`` runs joined by dots, the first two opening ``eyJ`` (base64 of ``{"``).
# It is read run by run (``_find_jwts``), not with one pattern: ``eyJ[\w-]{8,}\.`` restarts at
# every ``eyJ`` of a run without a dot and rescans the run each time (200 KB of ``eyJ`` took 12 s).
_JWT_HEAD = "eyJ"
_JWT_SEGMENT_MIN_CHARS = 11  # ``eyJ`` and at least 8 more
_WORD_RUN = r"[\w-]*"
_TELEGRAM = r":AA[\w-]{30,}"
_DISCORD_BOT = r"[MNO][\w-]{23,27}\.[\w-]{6}\.[\w-]{27,}"


def _looks_placeholder_token(body: str) -> bool:
    """``ghp_xxxx…`` or ``sk-proj-XXXX…``: a real prefix over a zero-entropy body."""
    return len(set(body[:VALUE_SAMPLE_CHARS].lower())) <= 3


def _find_prefix_tokens(text: str, spans: _Spans, claims: _Claims) -> None:
    for kind, literals, source in _PREFIX_RULES:
        pattern = compiled_patterns.get(source)
        if pattern is None:
            # A one-shot hook compiles only the rules whose literal occurs; a process that calls
            # again (the daemon, a benchmark) compiles them all, since the engine's literal
            # search is cheaper than the ``in`` gate.
            if not _state["warm"] and not any(literal in text for literal in literals):
                continue
            pattern = rx(source)
        for m in pattern.finditer(text):
            if not at_token_start(text, m.start()) or _looks_placeholder_token(m.group("b")):
                continue
            spans.append((m.start("b"), m.end("b"), kind))
            claims.append((m.start(), m.end()))


def _find_jwts(text: str, spans: _Spans, claims: _Claims) -> None:
    """Each run of word characters and dashes is measured once: every ``eyJ`` inside a run ends
    where the run ends, so the dot and the two runs after it are looked up once per run, whatever
    the number of starts (a token may also start after a ``-`` inside a longer run)."""
    run_from = run_to = -1  # the run measured last
    rest_after: dict[int, int | None] = {}  # where a token ends, by where its first run ends
    taken = 0
    for m in rx(_JWT_HEAD).finditer(text):
        start = m.start()
        if start < taken or not at_token_start(text, start):
            continue
        if not run_from <= start < run_to:
            run_from, run_to = start, _word_run_end(text, start)
        if run_to - start < _JWT_SEGMENT_MIN_CHARS:
            continue
        if run_to not in rest_after:
            rest_after[run_to] = _jwt_rest_end(text, run_to)
        end = rest_after[run_to]
        if end is not None:
            spans.append((start, end, "jwt"))
            claims.append((start, end))
            taken = end


def _word_run_end(text: str, start: int) -> int:
    """Where the run of word characters and dashes at ``start`` ends (``start`` if there is none)."""
    m = rx(_WORD_RUN).match(text, start)
    return m.end() if m else start


def _jwt_rest_end(text: str, head_end: int) -> int | None:
    """Where the payload and signature after a JWT header's run end, or None if they are not there."""
    payload = head_end + 1
    if not text.startswith("." + _JWT_HEAD, head_end):
        return None
    payload_end = _word_run_end(text, payload)
    if payload_end - payload < _JWT_SEGMENT_MIN_CHARS or not text.startswith(".", payload_end):
        return None
    return _word_run_end(text, payload_end + 1)


def _find_structured_tokens(text: str, spans: _Spans, claims: _Claims) -> None:
    """JWTs, Telegram bot tokens and Discord bot tokens: no vendor prefix, a fixed structure."""
    if _JWT_HEAD in text:
        _find_jwts(text, spans, claims)
    if ":AA" in text:
        for m in rx(_TELEGRAM).finditer(text):
            start = m.start()
            while start > m.start() - 10 and start > 0 and text[start - 1].isdigit():
                start -= 1
            if m.start() - start < 8 or (start > 0 and text[start - 1].isdigit()):
                continue
            if at_token_start(text, start) or text.endswith("bot", 0, start):
                spans.append((start, m.end(), "telegram_bot_token"))
                claims.append((start, m.end()))
    for m in rx(_DISCORD_BOT).finditer(text):
        if at_token_start(text, m.start()) and is_opaque(m.group()):
            spans.append((m.start(), m.end(), "discord_token"))
            claims.append((m.start(), m.end()))


# --------------------------------------------------------------------------------------------
# Anchored detectors: PEM private keys
# --------------------------------------------------------------------------------------------

_PEM_MARKER = r"-----(?P<edge>BEGIN|END) [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
# A line of a truncated body (``head -5 id_rsa``): base64, or an RFC 1421 header, or empty; with an
# optional YAML indent, Claude Code gutter (``     7→``) or quote, ending at a line break.
_PEM_TRUNCATED_BODY = (
    r"(?:(?:\r?\n|\\r?\\n)[ \t]*(?:\d{1,9}\u2192[ \t]*)?[\"']?"
    r"(?:[A-Za-z0-9+/=]{1,200}|[A-Za-z][A-Za-z-]{0,30}: [^\r\n\\]{0,200})?[ \t]*"
    r"(?=\r?\n|\\[rn]|[\"']|$))+"
)
_PEM_BASE64_RUN = r"[A-Za-z0-9+/=]{16}"
# What a body between BEGIN and END is made of: base64, line breaks (escaped too), gutters, quotes,
# indents, RFC 1421 headers (``DEK-Info: AES-128-CBC,…``); a sentence has ``.;`()`` and the like.
_PEM_BODY_CHARS = r"[A-Za-z0-9+/=\s\"'\\\u2192,:-]*"
_PEM_MASKED_BODY = r"(?:\s|\\[rn]|\d{1,9}\u2192|[\"'])*\[REDACTED:[a-z_]+\](?:\s|\\[rn]|\d{1,9}\u2192)*"
_PEM_LEAD = r"[ \t]*(?:\r?\n|\\r?\\n)"
# One line of a body above an END line, its line break excluded: gutter or indent, then base64 or
# an RFC 1421 header, or nothing (``_pem_headless`` walks these backwards).
_PEM_LINE_MAX_CHARS = 240
_PEM_BODY_LINE = (
    r"[ \t]*(?:\d{1,9}\u2192[ \t]*)?[\"']?"
    r"(?:(?P<b64>[A-Za-z0-9+/=]{1,200})|(?P<hdr>[A-Za-z][A-Za-z-]{0,30}: [^\r\n\\]{0,200}))?[ \t]*"
)
_PEM_LINE_LEAD = r"[ \t]*(?:\d{1,9}\u2192[ \t]*)?[\"']?"


def _find_pem_keys(text: str, spans: _Spans, claims: _Claims) -> None:
    """Pair BEGIN/END markers in one pass. A BEGIN without END is a truncated block, an END without
    BEGIN a headless one; so are both edges of a pair whose text between holds prose (markers
    named in two sentences), not a key's body."""
    if "PRIVATE KEY" not in text:
        return
    open_begin: re.Match[str] | None = None
    previous_end = 0  # a headless body never reaches back past the marker before its END
    for m in rx(_PEM_MARKER).finditer(text):
        if m.group("edge") == "BEGIN":
            if open_begin is not None:
                _pem_truncated(text, open_begin, m.start(), spans, claims)
            open_begin = m
        elif open_begin is not None and rx(_PEM_BODY_CHARS).fullmatch(text, open_begin.end(), m.start()):
            _pem_body(text, open_begin.end(), m.start(), spans)
            claims.append((open_begin.start(), m.end()))
            open_begin = None
        else:
            if open_begin is not None:
                _pem_truncated(text, open_begin, m.start(), spans, claims)
                open_begin = None
            _pem_headless(text, m, previous_end, spans, claims)
        previous_end = m.end()
    if open_begin is not None:
        _pem_truncated(text, open_begin, len(text), spans, claims)


def _pem_body(text: str, body_start: int, body_end: int, spans: _Spans) -> None:
    """Mask between the line break after BEGIN and the line break before END."""
    if rx(_PEM_MASKED_BODY).fullmatch(text, body_start, body_end):
        return
    if not rx(_PEM_BASE64_RUN).search(text, body_start, body_end):
        return
    lead = rx(_PEM_LEAD).match(text, body_start, body_end)
    start = lead.end() if lead else body_start
    end = body_end
    for sep in ("\\n", "\n"):
        cut = text.rfind(sep, start, body_end)
        if cut != -1 and not text[cut + len(sep) : body_end].strip(" \t\"'0123456789\u2192"):
            end = cut - 1 if sep == "\n" and cut > start and text[cut - 1] == "\r" else cut
            break
    if end > start:
        spans.append((start, end, "private_key"))


def _pem_headless(text: str, end: re.Match[str], floor: int, spans: _Spans, claims: _Claims) -> None:
    """An END line whose BEGIN is not in the text (a clipped or tail-read excerpt, ``tail -5 id_rsa``):
    the body lines above it are masked, read backwards one bounded line at a time. Every body line
    but the last is as wide as the one above it, and RFC 1421 headers sit above an empty line, so a
    line of prose that happens to be base64 ("Thanks") ends the body."""
    start = cursor = _pem_line_start(text, end.start(), floor)  # the END line's gutter or indent
    width: int | None = None  # of the full body lines, once the line above the last is read
    lines = 0
    headers_only = False
    while cursor > floor:
        line_end, line_start = _pem_previous_line(text, cursor, floor)
        line = rx(_PEM_BODY_LINE).fullmatch(text, line_start, line_end) if line_start is not None else None
        if line is None or line_start is None:
            break
        base64 = line.group("b64")
        if base64 is not None:
            if headers_only or (width is not None and len(base64) != width):
                break
            if lines and width is None:
                width = len(base64)
        elif line.group("hdr") is None:
            headers_only = True  # an empty line: only headers above it
        lines += 1
        start = cursor = line_start
    if start >= end.start() or not rx(_PEM_BASE64_RUN).search(text, start, end.start()):
        return
    if rx(_PEM_MASKED_BODY).fullmatch(text, start, end.start()):
        return
    lead = rx(_PEM_LINE_LEAD).match(text, start, end.start())
    _pem_body(text, lead.end() if lead else start, end.start(), spans)
    claims.append((start, end.end()))


def _pem_line_start(text: str, at: int, floor: int) -> int:
    """Where the line holding ``at`` starts when only a gutter, an indent or a quote precedes ``at``
    on it; else ``at``."""
    lead = max(floor, at - _PEM_LINE_MAX_CHARS)
    i = at
    while i > lead and text[i - 1] in " \t\"'0123456789\u2192":
        i -= 1
    at_line_start = i == floor or text[i - 1] == "\n" or text.endswith("\\n", floor, i)
    return i if at_line_start else at


def _pem_previous_line(text: str, line_start: int, floor: int) -> tuple[int, int | None]:
    """(end, start) of the line before the one starting at ``line_start``, over a real or a
    JSON-escaped line break; start is None when there is no such line or it is longer than any
    body line."""
    if text.endswith("\\n", floor, line_start):
        sep, cr = 2, "\\r"
    elif text.endswith("\n", floor, line_start):
        sep, cr = 1, "\r"
    else:
        return line_start, None
    line_end = line_start - sep
    if text.endswith(cr, floor, line_end):
        line_end -= sep
    lead = max(floor, line_end - _PEM_LINE_MAX_CHARS)
    real = text.rfind("\n", lead, line_end)
    escaped = text.rfind("\\n", lead, line_end)
    starts = [at + 1 for at in (real,) if at != -1] + [at + 2 for at in (escaped,) if at != -1]
    if starts:
        return line_end, max(starts)
    return line_end, (lead if lead == floor else None)


def _pem_truncated(text: str, begin: re.Match[str], limit: int, spans: _Spans, claims: _Claims) -> None:
    body = rx(_PEM_TRUNCATED_BODY).match(text, begin.end(), limit)
    if body is None or not rx(_PEM_BASE64_RUN).search(text, begin.end(), body.end()):
        return
    if rx(_PEM_MASKED_BODY).fullmatch(text, begin.end(), body.end()):
        return
    lead = rx(_PEM_LEAD).match(text, begin.end(), body.end())
    start = lead.end() if lead else begin.end()
    spans.append((start, body.end(), "private_key"))
    claims.append((begin.start(), body.end()))


# --------------------------------------------------------------------------------------------
# Context detectors
# --------------------------------------------------------------------------------------------

_OPERATOR = r"[=:]"
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEY_START_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_UNQUOTED_RUN = r"[^\s;&,\"'`<>)\]}\\=]*"
_OPENING_CHARS = frozenset("$<{[(#%")
_QUOTES = ('\\"', "\\'", '"""', "'''", '"', "'", "`")
_HEADER_TAIL = (
    r"(?:\\?[\"'`]\]?|\])?[ \t]{0,8}[:=][ \t]{0,8}(?:\\?[\"'`])?"
    r"(?:(?P<scheme>bearer|basic|token|bot|sso-key|apikey)[ \t]+)?"
    r"(?P<v>[^\s\"'`,;\\]+)"
)
_BEARER = r"bearer[ \t]+(?P<v>[a-z0-9._~+/=-]{16,})"
_URL_USERINFO = (
    r"://(?:(?P<user>[^\s:/@'\"<>\\]{0,256}):(?P<pw>[^\s/'\"<>\\]{1,512})"
    r"|(?P<tok>[^\s:/@'\"<>\\]{16,256}))@"
)
_FLAG_SPACE = r"--(?P<key>[A-Za-z][\w-]{0,40})[ \t]+(?=[^\s-])"
_XML_TAG = r"<(?P<key>[A-Za-z_][\w.-]{0,40})>(?P<v>[^<\n]{1,512})</(?P=key)>"
_NUGET = r"key=\"(?P<key>[^\"\n]{1,64})\"[ \t]+value=\"(?P<v>[^\"\n]{1,1024})\""
_NETRC = r"machine[ \t]+\S{1,200}(?:\s+login[ \t]+\S{1,200})?\s+password[ \t]+(?P<v>\S+)"
_CURL_USER = r"-(?:u|-user)[ \t=]*(?P<q>[\"']?)[^\s:'\"-][^\s:'\"]{0,99}:(?P<v>[^\s'\"]+)"
_SHORT_P = r"-p[ \t]*(?P<v>'[^'\n]{1,512}'|\"[^\"\n]{1,512}\"|[^\s'\"]+)"
_SHORT_P_CONTEXT = r"(?:\s-u[ \t]*[^\s-]\S{0,99}[ \t]+|sshpass[ \t]+)\Z"
_PROSE_PASSWORD = r"pass(?:word|phrase|code)[ \t]+(?:is|was)[ \t:]+(?P<v>[^\s,;]{6,})"


def _unquote_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Strip one pair of matching quotes from a captured value."""
    if end - start >= 2 and text[start] in "\"'" and text[end - 1] == text[start]:
        return start + 1, end - 1
    return start, end


class _KeywordScanner:
    """Find ``KEY OP VALUE`` assignments and mask values whose key names a secret.

    The scan is anchored on the operator (``=``, ``:``, ``:=``, ``=>``), which the engine finds
    fast; the key is read backwards from it (at most ``KEY_MAX_CHARS``) and the value forwards.
    Only key and operator are consumed, so a value that itself contains an assignment
    (``"command": "export DB_PASSWORD='…'"``) is still seen. A rejected unquoted value's extent
    is remembered, so ``token=token=token…`` costs one scan of the run, not one per operator.
    """

    def __init__(self, text: str, spans: _Spans) -> None:
        self.text = text
        self.spans = spans
        self.scanned_from = -1
        self.scanned_until = -1
        self.verdicts: dict[tuple[str, str, bool, str], bool] = {}

    def run(self) -> None:
        text = self.text
        masked_until = 0
        for m in rx(_OPERATOR).finditer(text):
            i = m.start()
            if i < masked_until:
                continue
            found = self.key_before(i)
            if found is None:
                continue
            key, op_end = found
            key_class = classify_key(key)
            if key_class is None:
                continue
            vstart = op_end
            while vstart < len(text) and vstart - op_end < 16 and text[vstart] in " \t":
                vstart += 1
            end = self.judge(key, key_class, vstart)
            if end is not None:
                masked_until = end

    def key_before(self, i: int) -> tuple[str, int] | None:
        """The key that ends before the operator at ``i``, and where the operator ends."""
        text = self.text
        op = text[i]
        nxt = text[i + 1 : i + 2]
        prev = text[i - 1 : i]
        if op == ":":
            if nxt in (":", "/", "=") or prev == ":":
                return None
            op_end, j = i + 1, i
        else:
            if nxt == "=" or prev in ("=", "!", "<", ">"):
                return None
            op_end = i + 2 if nxt == ">" else i + 1
            j = i - 1 if prev == ":" else i
        spaces = 0
        while j > 0 and spaces < 16 and text[j - 1] in " \t":
            j -= 1
            spaces += 1
        quoted = False
        if j > 0 and text[j - 1] == "]":
            j -= 1
            quoted = True
        if j > 0 and text[j - 1] in "\"'`":
            j -= 1
            quoted = True
            if j > 0 and text[j - 1] == "\\":
                j -= 1
        if op == ":" and spaces and not quoted:
            return None  # SQL ``PASSWORD :'var'``, not an assignment
        k = j
        floor = max(0, j - KEY_MAX_CHARS)
        while k > floor and text[k - 1] in _KEY_CHARS:
            k -= 1
        if k == floor and k > 0 and text[k - 1] in _KEY_CHARS:
            return None  # longer than any key
        if k >= 1 and k < j and text[k - 1] == "\\" and text[k] in "nrt":
            k += 1  # JSON-escaped line break before the key
        run = text[k:j]
        key = run.lstrip("-")
        dashes = len(run) - len(key)
        if not key or key[0] not in _KEY_START_CHARS or dashes > 2:
            return None
        if dashes == 1 and k > 0 and not text[k - 1].isspace():
            return None
        if k > 0 and text[k - 1] in "$@#%":
            return None  # $env:NAME, a shell or template variable
        if k >= 10 and text.endswith(MASK_MARK + ":", k - 10, k):
            return None
        return key, op_end

    def judge(self, key: str, key_class: str, vstart: int) -> int | None:
        """Mask the value at ``vstart`` if it passes the gate; return where the mask ends."""
        text = self.text
        quoted = self.quoted_value(vstart)
        if quoted is not None:
            start, end = quoted
            value = text[start : min(end, start + VALUE_SAMPLE_CHARS * 16)]
        else:
            start, end = vstart, self.unquoted_end(vstart)
            value = text[start : min(end, start + VALUE_SAMPLE_CHARS)]
        if end <= start:
            return None
        # what follows on the line decides whether a value that opens like a template is one
        tail = line_tail(text, end) if quoted is None and value[:1] in _OPENING_CHARS else text[end : end + 1]
        memo = (key_class, value, quoted is not None, tail)
        verdict = self.verdicts.get(memo)
        if verdict is None:
            verdict = value_ok(key_class, value, quoted is not None, text, end)
            if len(self.verdicts) < VERDICT_MEMO_ENTRIES:
                self.verdicts[memo] = verdict
        if not verdict:
            return None
        self.spans.append((start, end, mask_kind(key_class, key)))
        return end

    def quoted_value(self, vstart: int) -> tuple[int, int] | None:
        text = self.text
        if text[vstart : vstart + 1] not in ('"', "'", "`", "\\"):
            return None
        for quote in _QUOTES:
            if text.startswith(quote, vstart):
                start = vstart + len(quote)
                limit = min(len(text), start + QUOTED_VALUE_MAX_CHARS)
                newline = text.find("\n", start, limit)
                stop = limit if newline == -1 or len(quote) == 3 else newline
                close = text.find(quote, start, stop)
                while close > start and len(quote) == 1 and text[close - 1] == "\\":
                    close = text.find(quote, close + 1, stop)
                return (start, close) if close != -1 else None
        return None

    def unquoted_end(self, vstart: int) -> int:
        """End of an unquoted value: whitespace, separators, quotes, or a JSON escape."""
        if self.scanned_from <= vstart < self.scanned_until:
            return self.scanned_until
        text = self.text
        end = vstart + 1 if text.startswith("<", vstart) else vstart  # ``password=<Pa55w0rd``
        pattern = rx(_UNQUOTED_RUN)
        while True:
            m = pattern.match(text, end)
            end = m.end() if m else end
            if end + 1 < len(text) and text[end] == "\\" and text[end + 1] not in "nrt\"'\\":
                end += 1
                continue
            if text.startswith("=", end):
                # Base64 padding ends a value; ``=`` before more word characters starts the
                # next assignment (``a=b=c``), which keeps every value short.
                pad = end
                while pad < len(text) and pad - end < 3 and text[pad] == "=":
                    pad += 1
                if pad >= len(text) or not (text[pad].isalnum() or text[pad] in "_="):
                    end = pad
            break
        self.scanned_from, self.scanned_until = vstart, end
        return end


def _find_keyword_values(text: str, lowered: str, spans: _Spans) -> None:
    if "=" in text or ":" in text:
        _KeywordScanner(text, spans).run()
    if "--" in text:
        scanner = _KeywordScanner(text, spans)
        for m in rx(_FLAG_SPACE).finditer(text):
            if m.start() > 0 and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_-"):
                continue
            key_class = classify_key(m.group("key"))
            if key_class is not None:
                scanner.judge(m.group("key"), key_class, m.end())
    if "</" in text:
        for m in rx(_XML_TAG).finditer(text):
            _judge_captured(text, m, classify_key(m.group("key")), spans)
    if "value=" in text:
        for m in rx(_NUGET).finditer(text):
            _judge_captured(text, m, classify_key(m.group("key")), spans)


def _judge_captured(text: str, m: re.Match[str], key_class: str | None, spans: _Spans) -> None:
    if key_class is None:
        return
    start, end = _unquote_span(text, m.start("v"), m.end("v"))
    value = text[start:end]
    if value_ok(key_class, value, True, text, end):
        spans.append((start, end, mask_kind(key_class, m.group("key"))))


def _find_headers(text: str, lowered: str, spans: _Spans) -> None:
    for name in SECRET_HEADER_NAMES:  # each pattern starts with its name: the engine's literal search runs
        if name not in lowered:
            continue
        for m in rx(name + _HEADER_TAIL).finditer(lowered):
            if not at_word_start(text, m.start()):
                continue
            start, end = m.span("v")
            value = text[start:end]
            if is_placeholder(value) or len(value) < SECRET_MIN_CHARS:
                continue
            scheme = m.group("scheme") or ""
            kind = {"bearer": "bearer_token", "basic": "basic_auth"}.get(scheme, "auth_token")
            if not scheme and name != "authorization":
                kind = "api_key"
            spans.append((start, end, kind))
    if "bearer" in lowered:
        for m in rx(_BEARER).finditer(lowered):
            start, end = m.span("v")
            if at_word_start(text, m.start()) and is_opaque(text[start:end]):
                spans.append((start, end, "bearer_token"))


def _find_url_credentials(text: str, lowered: str, spans: _Spans) -> None:
    if "://" not in text:
        return
    for m in rx(_URL_USERINFO).finditer(text):
        if m.group("pw") is not None:
            user = m.group("user")  # one letter (``postgres://u:pw@``) is a user, not a placeholder
            if not is_password_placeholder(m.group("pw")) and not (len(user) > 1 and is_placeholder(user)):
                spans.append((m.start("pw"), m.end("pw"), "password"))
        elif is_opaque(m.group("tok")) and not is_placeholder(m.group("tok")):
            spans.append((m.start("tok"), m.end("tok"), "url_token"))


def _find_cli_credentials(text: str, lowered: str, spans: _Spans) -> None:
    """``.netrc`` lines, ``curl -u user:pass``, ``-u user -p pass``, ``sshpass -p``, prose."""
    candidates: list[tuple[int, int]] = []
    if "machine" in text and "password" in text:
        candidates += [m.span("v") for m in rx(_NETRC).finditer(text) if at_word_start(text, m.start())]
    if "-u" in text:
        for m in rx(_CURL_USER).finditer(text):
            if m.start() > 0 and text[m.start() - 1].isspace():
                candidates.append(m.span("v"))
    if "-p" in text and ("-u" in text or "sshpass" in text):
        for m in rx(_SHORT_P).finditer(text):
            s = m.start()
            if s > 0 and text[s - 1].isspace() and rx(_SHORT_P_CONTEXT).search(text, max(0, s - 128), s):
                candidates.append(m.span("v"))
    for start, end in candidates:
        start, end = _unquote_span(text, start, end)
        value = text[start:end]
        if len(value) >= PASSWORD_MIN_CHARS and not is_password_placeholder(value):
            spans.append((start, end, "password"))
    if "pass" in lowered and (" is" in lowered or " was" in lowered):
        for m in rx(_PROSE_PASSWORD).finditer(lowered):
            start, end = m.span("v")
            value = text[start:end]
            if not lowered.endswith(("my ", "the ", "our "), max(0, m.start() - 4), m.start()):
                continue
            if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
                spans.append((start, end, "password"))


# An AWS secret access key alone (a credentials CSV, ``aws configure``'s answer, prose): exactly 40
# characters of base64 without padding. Random 40-character base64 changes character class about 26
# times (upper, lower, digit, ``+/``); a CamelCase name or a path of words does so far less often.
_AWS_SECRET = r"(?<![\w+/=.-])[A-Za-z0-9+/]{40}(?![\w+/=-])"
_CHAR_CLASS_RUN = r"[A-Z]+|[a-z]+|[0-9]+|[+/]+"
AWS_SECRET_MIN_CLASS_RUNS = 18
_BASE64_NEIGHBOUR = r"[A-Za-z0-9+/=]{16}"


def _find_bare_aws_secrets(text: str, lowered: str, spans: _Spans) -> None:
    for m in rx(_AWS_SECRET).finditer(text):
        value = m.group()
        if value.isdigit() or value.isalpha() or value.lower() == value or value.upper() == value:
            continue  # a secret key mixes upper case, lower case and digits; a hex digest does not
        if len(rx(_CHAR_CLASS_RUN).findall(value)) < AWS_SECRET_MIN_CLASS_RUNS:
            continue
        if not any(c.isdigit() for c in value) or _in_base64_block(text, m.start(), m.end()):
            continue
        spans.append((m.start(), m.end(), "aws_secret_key"))


def _in_base64_block(text: str, start: int, end: int) -> bool:
    """The last (or first) line of a certificate or public key: base64 on the line next to it."""
    for sep in ("\n", "\\n"):
        if text.endswith(sep, 0, start) and rx(_BASE64_NEIGHBOUR).search(
            text, max(0, start - len(sep) - 16), start - len(sep)
        ):
            return True
        if text.startswith(sep, end) and rx(_BASE64_NEIGHBOUR).match(text, end + len(sep)):
            return True
    return False


# --------------------------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------------------------

_ANCHORED: tuple[Callable[[str, _Spans, _Claims], None], ...] = (
    _find_pem_keys,
    _find_prefix_tokens,
    _find_structured_tokens,
)
_CONTEXTUAL: tuple[Callable[[str, str, _Spans], None], ...] = (
    _find_headers,
    _find_url_credentials,
    _find_cli_credentials,
    _find_keyword_values,
    _find_bare_aws_secrets,  # last: a keyword span over the same key keeps its kind
)


def _merge_claims(claims: _Claims) -> _Claims:
    merged: _Claims = []
    for start, end in sorted(claims):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _outside_claims(span: _Span, claims: _Claims, claim_starts: list[int]) -> Iterator[_Span]:
    """The parts of a context span that no anchored token claimed."""
    start, end, kind = span
    i = max(bisect_right(claim_starts, start) - 1, 0)
    cursor = start
    while i < len(claims) and claims[i][0] < end:
        c_start, c_end = claims[i]
        if c_end > cursor:
            if c_start > cursor:
                yield (cursor, c_start, kind)
            cursor = max(cursor, c_end)
        i += 1
    if cursor < end:
        yield (cursor, end, kind)


def _inside_mask(text: str, start: int) -> bool:
    """A context rule matched the kind inside one of our masks (``-u sk_live_[REDACTED:x]:``)."""
    mark = text.rfind(MASK_MARK, max(0, start - 48), start)
    return mark != -1 and "]" not in text[mark:start]


def _assemble(text: str, spans: _Spans) -> Redaction:
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged: _Spans = []
    for start, end, kind in spans:
        if end <= start:
            continue
        if merged and start < merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end, merged[-1][2])
        else:
            merged.append((start, end, kind))
    if not merged:
        return Redaction(text)
    out: list[str] = []
    kinds: dict[str, int] = {}
    cursor = 0
    for start, end, kind in merged:
        out.append(text[cursor:start])
        out.append(MASK_FORMAT.format(kind=kind))
        kinds[kind] = kinds.get(kind, 0) + 1
        cursor = end
    out.append(text[cursor:])
    return Redaction("".join(out), len(merged), kinds)


def redact(text: str) -> Redaction:
    """Mask every secret found in ``text``; text without secrets comes back unchanged."""
    if not text:
        return Redaction(text)
    result = _redact(text)
    _state["warm"] = True
    return result


def _redact(text: str) -> Redaction:
    anchored: _Spans = []
    claims: _Claims = []
    for find_anchored in _ANCHORED:
        find_anchored(text, anchored, claims)
    lowered = ascii_lower(text)
    contextual: _Spans = []
    for find_contextual in _CONTEXTUAL:
        find_contextual(text, lowered, contextual)
    merged_claims = _merge_claims(claims)
    claim_starts = [start for start, _ in merged_claims]
    spans = anchored
    for span in contextual:
        if _inside_mask(text, span[0]):
            continue
        for piece in _outside_claims(span, merged_claims, claim_starts):
            if piece[1] - piece[0] >= PASSWORD_MIN_CHARS or piece == span:
                spans.append(piece)
    return _assemble(text, spans)
