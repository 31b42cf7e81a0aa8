"""How the redactor judges what it found: is a value a placeholder, a reference to code, an opaque
token; does a key name a password, a secret or a token (`redact.py` finds the candidates).

Split from `redact.py` to keep each module readable; like it, standard library only (``re``,
``math``), and every pattern compiles lazily on first use (`rx`), shared by both modules.
"""

from __future__ import annotations

import math
import re

#: how every mask begins: a value holding one was masked already
MASK_MARK = "[REDACTED"

# Bounds (characters) on how far a value is judged; the mask itself always covers the whole value.
VALUE_SAMPLE_CHARS = 256
PASSWORD_MIN_CHARS = 4
SECRET_MIN_CHARS = 8
TOKEN_MIN_CHARS = 16
TOKEN_MIN_ENTROPY_BITS = 3.0

compiled_patterns: dict[str, re.Pattern[str]] = {}


def rx(source: str) -> re.Pattern[str]:
    """Compile on first use and keep it: the hook path pays only for the patterns it needs."""
    pattern = compiled_patterns.get(source)
    if pattern is None:
        pattern = re.compile(source, re.ASCII)
        compiled_patterns[source] = pattern
    return pattern


# --------------------------------------------------------------------------------------------
# Value judgement: placeholders, references, opaque tokens
# --------------------------------------------------------------------------------------------

_NULLISH = frozenset(
    "null none nil undefined true false yes no on off string str int bool boolean number any bytes "
    "object optional required empty unset redacted hidden masked secret password token key value "
    "example sample dummy fake placeholder todo tbd".split()
)
_PLACEHOLDER_RE = (
    r"(?i:your|my|the|insert|enter|put|paste|replace|example|sample|dummy|fake|placeholder)[-_ .]"
)
_PLACEHOLDER_ENDINGS = ("-here", "_here", "replaceme", "replace_me", "replace-me")
_TEMPLATE_OPENERS = ("${", "$(", "{{", "{%", "%(", "#{", "<%", "[[")
_REFERENCE_RE = r"[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*"
_WORDY_SEGMENT_RE = r"[a-z]+[0-9]{0,2}(?:_[a-z0-9]+)*|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*|[A-Z]?[a-z]+(?:[A-Z][a-z]+)*[0-9]{0,2}|_\w*"
_PATH_SEGMENT_RE = r"[a-z0-9._@-]*|[A-Z][a-z0-9._-]*"
_YAML_TAGS = frozenset(
    "Ref Sub GetAtt ImportValue Join Select FindInMap If Base64 GetAZs Split vault env".split()
)


def is_placeholder(value: str) -> bool:
    """Empty values, templates, ``<…>``, ``$VAR``, ``***``, elisions and our own masks."""
    v = value.strip()
    if len(v) < 2 or MASK_MARK in v:
        return True
    if v.startswith(_TEMPLATE_OPENERS) or v[0] in "<{[(" or v.startswith("$"):
        return True
    if v[0] == "%" and v[-1] == "%":
        return True
    if v.endswith(("...", "\u2026")) or not v.strip("*xX.\u2022\u2026-_# "):
        return True
    if v.lower() in _NULLISH:
        return True
    if v.isupper() and not any(c.isdigit() for c in v) and all(c.isalpha() or c == "_" for c in v):
        return True  # OPENAI_API_KEY (a reference) or TEXT (a metavar)
    return v.lower().endswith(_PLACEHOLDER_ENDINGS) or rx(_PLACEHOLDER_RE).match(v) is not None


# A password may begin as a template, a variable or a placeholder does (``$ { [ ( <``, ``my_``,
# ``the-``); it is one of those only when it is one whole (``is_password_placeholder``).
_CLOSER_OF = {"<": ">", "{": "}", "[": "]", "(": ")"}
_LINE_TAIL_CHARS = 200
# ``$name`` and member access on it (``$obj.field``, ``$env:NAME``, ``$this->``), nothing else
_VARIABLE_RE = r"\$[A-Za-z_]\w*(?:(?:\.|::?|->)[A-Za-z_]\w*)*(?:-|[(\[])?"
_NAME_RE = r"[A-Za-z_]\w*"
_PLACEHOLDER_WORD_SPLIT_RE = r"[-_ .]+"
_PLACEHOLDER_NOUNS = frozenset(
    "password passwd pass pw pwd passphrase passcode secret key token value here credential credentials "
    "string text db database user username app admin root service api".split()
)


def line_tail(text: str, end: int) -> str:
    """What follows a value on its line (bounded): where a template that opened in it would close."""
    limit = min(len(text), end + _LINE_TAIL_CHARS)
    newline = text.find("\n", end, limit)
    return text[end : newline if newline != -1 else limit]


def is_password_placeholder(value: str, tail: str = "") -> bool:
    """`is_placeholder` for a password, which may begin like a template or a placeholder does.

    ``{{ .Values.pw }}``, ``${DB_PASSWORD}``, ``$(cat /run/secret)``, ``<password>``, ``$DB_PASS``,
    ``$this->password`` and ``your_password_here`` are placeholders; ``$ecr3t!``, ``{Xy7pQ2``,
    ``<Pa55w0rd``, ``my_S3cretPw`` and ``the-horse-battery`` are passwords. ``tail`` is what follows
    an unquoted value on its line (a closer there closes the template), empty for a quoted value."""
    v = value.strip()
    opens = v[:1] in _CLOSER_OF or v.startswith(("$", "#{", "%("))
    prefixed = rx(_PLACEHOLDER_RE).match(v) is not None
    if len(v) < 2 or not (opens or prefixed):
        return is_placeholder(v)
    if MASK_MARK in v or v.lower() in _NULLISH or v.lower().endswith(_PLACEHOLDER_ENDINGS):
        return True
    if opens and (_closes(v, tail) or _is_variable(v)):
        return True
    return prefixed and _is_placeholder_words(v)


def _closes(value: str, tail: str) -> bool:
    """A template or bracket opened at the value's start is closed in the value or later on its line."""
    first = value[1] if value[0] in "$#%" and len(value) > 1 else value[0]
    closer = _CLOSER_OF.get(first)
    if closer is None:
        return False
    return value.endswith((closer, closer + "s")) or closer in tail


def _is_variable(value: str) -> bool:
    """``$NAME``, ``$env:NAME``, ``$this->field``: a variable whose name reads as code, not a password."""
    if rx(_VARIABLE_RE).fullmatch(value) is None:
        return False
    return all(rx(_WORDY_SEGMENT_RE).fullmatch(name) for name in rx(_NAME_RE).findall(value))


def _is_placeholder_words(value: str) -> bool:
    """``my_password``, ``the-real-pw``, ``your api key``: words only, one of them what the value stands for."""
    words = [w for w in rx(_PLACEHOLDER_WORD_SPLIT_RE).split(value.lower()) if w]
    return all(w.isalpha() for w in words) and any(w in _PLACEHOLDER_NOUNS for w in words[1:])


def _is_yaml_tag(value: str) -> bool:
    if not value.startswith("!"):
        return False
    name = value[1:].split(" ", 1)[0]
    return name in _YAML_TAGS


def _is_reference(value: str, text: str, value_end: int) -> bool:
    """An unquoted value that is code: ``os.environ[…]``, ``settings.KEY``, ``api_key)``, ``!Ref``."""
    if _is_yaml_tag(value):
        return True
    m = rx(_REFERENCE_RE).match(value)
    if m is None:
        return False
    after = value[m.end() : m.end() + 1] or text[value_end : value_end + 1]
    if m.end() < len(value) and after not in "([":
        return False
    if after in ("(", "["):
        return True
    ref = m.group()
    if "::" in ref or "->" in ref:
        return True
    if "." in ref:
        return all(rx(_WORDY_SEGMENT_RE).fullmatch(s) for s in ref.split("."))
    nxt = text[value_end : value_end + 1]
    if nxt in (")", ","):
        return True
    return "_" in ref and ref.lower() == ref and not any(c.isdigit() for c in ref)


def _is_dotted_words(value: str) -> bool:
    parts = value.split(".")
    return len(parts) >= 2 and all(rx(_WORDY_SEGMENT_RE).fullmatch(p) for p in parts)


def _is_path(value: str) -> bool:
    """``/var/secrets/key.json`` or ``uploads/2024/x.pdf``; base64 with ``/`` mixes case."""
    if "/" not in value and "\\" not in value:
        return False
    if "+" in value or "=" in value:
        return False
    parts = [p for p in re.split(r"[/\\]", value) if p]
    if not parts:
        return True
    if parts[0] in ("~", ".", ".."):
        parts = parts[1:]
    if len(parts) >= 1 and re.fullmatch(r"[A-Za-z]:", parts[0]):
        parts = parts[1:]
    return all(rx(_PATH_SEGMENT_RE).fullmatch(p) for p in parts)


def _entropy_bits(sample: str) -> float:
    n = len(sample)
    total = 0.0
    for ch in set(sample):
        p = sample.count(ch) / n
        total -= p * math.log2(p)
    return total


def is_opaque(value: str) -> bool:
    """Looks machine-generated: long, mixed character classes, enough entropy, no word shape."""
    sample = value[:VALUE_SAMPLE_CHARS]
    if len(value) < TOKEN_MIN_CHARS:
        return False
    classes = (
        any(c.islower() for c in sample) + any(c.isupper() for c in sample) + any(c.isdigit() for c in sample)
    )
    if classes < 2 or _entropy_bits(sample) < TOKEN_MIN_ENTROPY_BITS:
        return False
    return not (_is_dotted_words(sample) or _is_path(sample))


# --------------------------------------------------------------------------------------------
# Key classification
# --------------------------------------------------------------------------------------------

_PASSWORD_WORDS = frozenset("password passwd pwd pass passphrase passcode".split())
_SECRET_WORDS = frozenset(
    "secret mnemonic signature sig pat credential credentials privatekey apikey apisecret secretkey "
    "accesskey authtoken accesstoken refreshtoken clientsecret".split()
)
_TOKEN_WORDS = frozenset("token key auth session sessionid jsessionid phpsessid".split())
_STRONG_QUALIFIERS = frozenset(
    "secret private api access auth signing encryption encrypt hmac master account storage bot refresh "
    "session bearer oauth client app webhook service deploy personal jwt security admin root "
    "subscription consumer".split()
)
_META_FIRST = frozenset(
    "max min num total input output cache primary sort partition foreign idempotency is has use enable "
    "enabled disable bypass csrf xsrf unique".split()
)
# The secrets this package reads from its own environment: their values are secrets whatever
# they look like (an OpenAI-compatible server may issue a plain lower-case key).
_OWN_SECRET_KEYS = frozenset(
    {("bli", "memory", "device", "token"), ("bli", "memory", "embed", "key"), ("bli", "memory", "llm", "key")}
)
_KEY_PART_RE = r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+"
_key_classes: dict[str, str | None] = {}


def classify_key(key: str) -> str | None:
    """``password``, ``secret`` (strong), ``token`` (weak: needs an opaque value) or None."""
    if key in _key_classes:
        return _key_classes[key]
    comps = [c.lower() for c in rx(_KEY_PART_RE).findall(key)]
    result = _classify_parts(comps)
    if len(_key_classes) < 4096:
        _key_classes[key] = result
    return result


def _classify_parts(comps: list[str]) -> str | None:
    if tuple(comps) in _OWN_SECRET_KEYS:
        return "secret"
    if not comps or comps[0] in _META_FIRST or "public" in comps or "publishable" in comps:
        return None
    last = comps[-1]
    if last in _PASSWORD_WORDS or last.endswith(("password", "passwd")):
        return "password"
    if last in _SECRET_WORDS or last.endswith("secret"):
        return "secret"
    if last in _TOKEN_WORDS or last.endswith(("token", "key")):
        qualifiers = set(comps[:-1])
        embedded = last[: -len("token")] if last.endswith("token") else last[: -len("key")]
        if qualifiers & _STRONG_QUALIFIERS or embedded in _STRONG_QUALIFIERS:
            return "secret"
        return "token"
    return None


def mask_kind(key_class: str, key: str) -> str:
    if key_class == "password":
        return "password"
    lowered = key.lower().replace("-", "_")
    if key_class == "secret" and ("api_key" in lowered or "apikey" in lowered):
        return "api_key"
    if "private_key" in lowered or "privatekey" in lowered:
        return "private_key"
    return key_class


def value_ok(key_class: str, value: str, quoted: bool, text: str, value_end: int) -> bool:
    """Gate a candidate value by the strength of its key."""
    minimum = {"password": PASSWORD_MIN_CHARS, "secret": SECRET_MIN_CHARS}.get(key_class, TOKEN_MIN_CHARS)
    if key_class == "password":
        placeholder = is_password_placeholder(value, "" if quoted else line_tail(text, value_end))
    else:
        placeholder = is_placeholder(value)
    if len(value) < minimum or placeholder or value.startswith("-----"):
        return False
    if not quoted and _is_reference(value, text, value_end):
        return False
    if key_class == "password":
        return True
    if key_class == "secret":
        return not _is_path(value) and not _is_dotted_words(value)
    return is_opaque(value)
