"""Could this text hold a secret? A cheap, standard-library-only pre-scan for the prompt hook.

The prompt hook sends the prompt to the door as its search query, and a query must leave the machine
redacted like everything else (`bli_memory.redact`). Importing the redactor costs the hook's cold
start tens of milliseconds (its `dataclasses` pulls in `inspect`), more than the rest of the recall
path, so the hook imports it only when `might_hold_secret` says the text could hold something the
redactor masks. The scan may say yes too often (that costs the import), never too rarely: every
detector of the redactor needs one of the markers below before it can match, and the scan looks for
exactly those (a test runs the redactor's whole fixture corpus, and random mixes of it, through both).

- Vendor tokens: the literal prefix each rule starts with (`AKIA`, `ghp_`, `sk-`, `xox`…); the few
  common in ordinary text only where the rule could match: `sk-` at the start of a word ("task-list"
  is not), `bli_` and `SK` before a run of token characters as long as the rule needs ("bli_memory",
  "TASK" are not).
- PEM keys (`PRIVATE KEY`, which a body without its BEGIN line still ends with), JWTs (`eyJ`),
  Telegram bot tokens (`:AA`), Discord bot tokens (no literal: a run of at least 59 non-space
  characters, the shortest such token), bare AWS secret keys (no literal: a run of at least 40
  non-space characters mixing upper case, lower case and digits).
- Header names and `bearer`, URL userinfo (`://`), `.netrc`/prose passwords (`password`…), `-u`/`--user`
  after a space, `sshpass`.
- `KEY = value` / `KEY: value` / `--key value` / `<key>value</key>` / NuGet `key="…" value="…"`: the
  redactor masks a value only when its key's last word names a secret (`…password`, `…token`,
  `…key`, `secret`, `auth`, `session`, `pat`, `sig`…), so the scan looks for those endings followed
  by an operator, instead of flagging every `=` or `:`.

Imports nothing but `scan_text` (what it reads the same way as the redactor): it runs in the hook,
where `re` is not loaded for this purpose.
"""

from __future__ import annotations

from bli_memory.scan_text import SECRET_HEADER_NAMES, ascii_lower, at_token_start

#: literal prefixes of the redactor's vendor-token rules (`redact._PREFIX_RULES`); a test checks
#: that each rule's literals contain one of these (or of RUN_MARKERS, WORD_START_MARKERS)
TOKEN_MARKERS = (
    "AKIA",
    "ASIA",
    "ABIA",
    "ACCA",
    "A3T",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "gldt-",
    "glrt-",
    "glptt-",
    "glft-",
    "glimt-",
    "gloas-",
    "glcbt-",
    "glsoat-",
    "glffct-",
    "glagent-",
    "T3BlbkFJ",
    "AIza",
    "GOCSPX-",
    "ya29.",
    "xox",
    "xapp-",
    "hooks.slack.com",
    "discord",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "rk_test_",
    "whsec_",
    "SG.",
    "key-",
    "npm_",
    "pypi-AgEIcHlwaS5vcmc",
    "hf_",
    "gsk_",
    "xai-",
    "r8_",
    "pplx-",
    "lsv2_",
    "tvly-",
    "pcsk_",
    "fw_",
    "dapi",
    "_v1_",
    "HRKU-",
    "shp",
    "lin_api_",
    "ntn_",
    "secret_",
    "dp.",
    "hvs.",
    "hvb.",
    "pul-",
    "PMAK-",
    "sntry",
    "glsa_",
    "glc_",
    "ATATT3",
    "NRAK-",
    "AGE-SECRET-KEY-1",
    "ops_eyJ",
    "sbp_",
    "sb_secret_",
    "fo1_",
    "e2b_",
    "PRIVATE KEY",
    "eyJ",
    ":AA",
    "://",
    "sshpass",
)
#: prefixes common in ordinary text (`bli_memory`, `TASK`), flagged only when at least this many token
#: characters follow, as the redactor's rule needs (`bli_` + 43, Twilio's `SK` + 32 hex digits)
RUN_MARKERS = (("bli_", 43), ("SK", 32))
#: prefixes the redactor takes only at the start of a word (they occur inside words: "task-list")
WORD_START_MARKERS = ("sk-",)
#: looked for in the lower-cased text: header names, `bearer`, and prose or `.netrc` passwords
LOWER_MARKERS = (
    *SECRET_HEADER_NAMES,
    "bearer",
    "password",
    "passphrase",
    "passcode",
)
#: the endings of a key whose value the redactor judges (`redact_judge.classify_key`: its last word)
SECRET_KEY_ENDINGS = (
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "passcode",
    "secret",
    "mnemonic",
    "signature",
    "sig",
    "pat",
    "credential",
    "credentials",
    "key",
    "token",
    "auth",
    "session",
    "sessionid",
    "sessid",
)
#: between a key's last letter or digit and its operator: quotes, `]`, spaces, the `:` of `:=`, and
#: the key characters that are no part of a word (`token_ =`)
_AFTER_KEY_CHARS = " \t\"'`]\\:_.-"
_KEY_WINDOW_CHARS = 80
#: a Discord bot token is at least 24 + 1 + 6 + 1 + 27 characters without a space
LONG_RUN_MIN_CHARS = 59
#: a bare AWS secret key is 40 characters that mix upper case, lower case and digits
AWS_SECRET_CHARS = 40
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_FLAG_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _found_at_word_start(text: str, marker: str) -> bool:
    at = text.find(marker)
    while at != -1:
        if at_token_start(text, at):
            return True
        at = text.find(marker, at + 1)
    return False


def _followed_by_run(text: str, marker: str, size: int) -> bool:
    """Is `marker` somewhere followed by at least `size` characters of `[A-Za-z0-9_-]`?"""
    at = text.find(marker)
    while at != -1:
        start = at + len(marker)
        end = start
        while end < len(text) and end - start < size and text[end] in _FLAG_KEY_CHARS:
            end += 1
        if end - start >= size:
            return True
        at = text.find(marker, at + 1)
    return False


def _after_space(text: str, marker: str) -> bool:
    at = text.find(marker)
    while at != -1:
        if at > 0 and text[at - 1].isspace():
            return True
        at = text.find(marker, at + 1)
    return False


def _names_secret(word: str) -> bool:
    """Does `word` (read after `--` or `</`) end with a key word that names a secret?"""
    return word.rstrip(_AFTER_KEY_CHARS).lower().endswith(SECRET_KEY_ENDINGS)


def _secret_assignment(lowered: str) -> bool:
    """`PASSWORD=…`, `"api_key": …`, `token := …`: a key ending that names a secret, then only quotes,
    `]`, spaces and word separators up to an operator. Looked for from the endings, which are rare in
    a prompt, not from the operators, which are everywhere in code."""
    size = len(lowered)
    for ending in SECRET_KEY_ENDINGS:
        at = lowered.find(ending)
        while at != -1:
            end = at + len(ending)
            limit = min(size, end + _KEY_WINDOW_CHARS)
            while end < limit:
                if lowered[end] in "=:":
                    return True
                if lowered[end] not in _AFTER_KEY_CHARS:
                    break
                end += 1
            at = lowered.find(ending, at + 1)
    return False


def _word_after(text: str, start: int, chars: frozenset[str]) -> str:
    end = start
    while end < len(text) and end - start <= _KEY_WINDOW_CHARS and text[end] in chars:
        end += 1
    return text[start:end]


def _secret_flag_or_tag(text: str) -> bool:
    """`--password VALUE` and `<token>VALUE</token>`: the word after `--` or `</` names a secret."""
    for opener, chars in (("--", _FLAG_KEY_CHARS), ("</", _WORD_CHARS | {".", "-"})):
        at = text.find(opener)
        while at != -1:
            if _names_secret(_word_after(text, at + len(opener), chars)):
                return True
            at = text.find(opener, at + 1)
    return False


def _may_hold_aws_secret(run: str) -> bool:
    """A run long enough for a bare AWS secret key, with upper case, lower case and a digit."""
    if len(run) < AWS_SECRET_CHARS or run.lower() == run or run.upper() == run:
        return False
    return any(c.isdigit() for c in run)


def might_hold_secret(text: str) -> bool:
    """False only when the redactor would return `text` unchanged; True when it might mask something."""
    if not text:
        return False
    if any(marker in text for marker in TOKEN_MARKERS):
        return True
    if any(_found_at_word_start(text, marker) for marker in WORD_START_MARKERS):
        return True
    lowered = ascii_lower(text)
    if any(marker in lowered for marker in LOWER_MARKERS):
        return True
    if _after_space(text, "-u") or _after_space(text, "--user"):
        return True
    if 'value="' in text and 'key="' in text:
        return True
    if any(len(run) >= LONG_RUN_MIN_CHARS or _may_hold_aws_secret(run) for run in text.split()):
        return True
    if any(_followed_by_run(text, marker, size) for marker, size in RUN_MARKERS):
        return True
    if ("=" in text or ":" in text) and _secret_assignment(lowered):
        return True
    return ("--" in text or "</" in text) and _secret_flag_or_tag(text)
