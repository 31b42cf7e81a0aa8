"""What reaches the agent: the real prompt and session-start hooks, run as the host runs them, and
their blocks read back line by line (scripts/eval_capture.py).

Each hook is `bli-memory-mcp hook <event>` in a subprocess with its JSON payload on stdin, paired with
the door through the environment (`BLI_MEMORY_DASHBOARD_URL`, `BLI_MEMORY_DEVICE_TOKEN`), its space
named by `BLI_MEMORY_CONTAINER_TAG`, the daemon off: whatever the hooks filter, order or render is
measured as it is, not re-implemented here.

A session-start line is judged by simple rules, stated here once:

- a line is an item of the block: a line that opens with `- ` after the block's marker (a pin, a
  profile fact or a recent row); its text is what follows the `[age · id …]` facets, if any;
- a question: its text ends in `?`, or opens with a question word (QUESTION_WORDS) in a first
  sentence that does not end in `.` or `!` ("Where does it live? In ..." and "which broker do we use"
  are questions; "When you write tests, use AssertJ." is not);
- a fragment: its text has fewer than FRAGMENT_MIN_WORDS words, or no verb-like word: none of
  VERB_WORDS and no word ending in -ed, -ing or -s (crude on purpose: "Pins zq-broker 5.0.1." passes,
  "Vault agent sidecar file." does not).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

HOOK_TIMEOUT_S = 40.0
BLOCK_MARKER = "[bli]"
#: a line with fewer words than this is a fragment, whatever its words are
FRAGMENT_MIN_WORDS = 3
QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how is are was were do does did can could should would "
    "will shall".split()
)
#: auxiliaries, modals and the verbs a coding convention or decision is stated with, whose base form
#: the suffix rule does not catch
VERB_WORDS = frozenset(
    "is are was were be been am has have had do does did can could should would will shall must may "
    "might use run pin set keep get go put add make take give move call build bump stay need know own "
    "fix cut let lock read write say see try wrap open drop stop avoid prefer name".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_ITEM = re.compile(r"^\[bli\] - (?:\[[^\]]*\] )?(?P<text>.*)$")
_RECALL_ITEM = re.compile(r"^\[bli\] \d+\. ")
_FIRST_SENTENCE = re.compile(r"^.*?[.!?](?=\s|$)", re.DOTALL)


class HookFailed(Exception):
    """The hook could not be run or did not answer in time."""


def mcp_program() -> str:
    """`bli-memory-mcp` beside the interpreter, else on PATH."""
    beside = Path(sys.executable).parent / "bli-memory-mcp"
    if beside.exists():
        return str(beside)
    found = shutil.which("bli-memory-mcp")
    if found is None:
        raise HookFailed("bli-memory-mcp not found; install the package (pip install -e .)")
    return found


@dataclass(frozen=True)
class Hooks:
    """The client paired with one door: a HOME of its own, the door's URL and a device token."""

    home: Path
    url: str
    token: str
    env: dict[str, str]

    def run(self, event: str, tag: str, payload: Mapping[str, object]) -> str:
        """The hook's stdout for `payload`, asked in the space `tag`."""
        env = {
            **self.env,
            "HOME": str(self.home),
            "BLI_MEMORY_DASHBOARD_URL": self.url,
            "BLI_MEMORY_DEVICE_TOKEN": self.token,
            "BLI_MEMORY_CONTAINER_TAG": tag,
            "BLI_MEMORY_DAEMON": "0",
        }
        self.home.mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run(
                [mcp_program(), "hook", event],
                input=json.dumps(payload),
                capture_output=True,
                text=True,
                env=env,
                cwd=str(self.home),
                timeout=HOOK_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise HookFailed(f"the {event} hook did not answer within {HOOK_TIMEOUT_S:g} s") from None
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise HookFailed(f"the {event} hook exited {done.returncode}: {last}")
        return done.stdout

    def recall(self, tag: str, prompt: str) -> list[str]:
        """The rows of the prompt hook's block for `prompt` in the space `tag` (none: no block)."""
        payload = {"session_id": "eval-capture", "hook_event_name": "UserPromptSubmit", "prompt": prompt}
        return recall_rows(self.run("prompt", tag, payload))

    def briefing(self, tag: str) -> list[str]:
        """The item lines of the session-start block of the space `tag`."""
        payload = {"session_id": "eval-capture", "hook_event_name": "SessionStart", "source": "startup"}
        return briefing_lines(self.run("session-start", tag, payload))


def recall_rows(block: str) -> list[str]:
    """Each numbered row of a recall block, its continuation lines joined to it."""
    rows: list[str] = []
    for line in block.splitlines():
        if _RECALL_ITEM.match(line):
            rows.append(line[len(BLOCK_MARKER) + 1 :])
        elif rows and line.startswith(f"{BLOCK_MARKER}    "):
            rows[-1] += "\n" + line[len(BLOCK_MARKER) + 1 :].strip()
    return rows


def briefing_lines(block: str) -> list[str]:
    """The text of each item of a session-start block (a pin's later lines are left out)."""
    lines = []
    for line in block.splitlines():
        match = _ITEM.match(line)
        if match:
            lines.append(match.group("text").strip())
    return lines


def is_question(text: str) -> bool:
    """Ends in `?`, or opens with a question word in a first sentence that ends in neither `.` nor `!`."""
    text = text.strip()
    if text.endswith("?"):
        return True
    words = _WORD.findall(text)
    first = _FIRST_SENTENCE.match(text)
    stated = first is not None and first.group().endswith((".", "!"))
    return bool(words and words[0].lower() in QUESTION_WORDS and not stated)


def is_fragment(text: str) -> bool:
    """Under FRAGMENT_MIN_WORDS words, or no verb-like word (see the module's docstring)."""
    if len(text.split()) < FRAGMENT_MIN_WORDS:
        return True
    words = [word.lower() for word in _WORD.findall(text)]
    return not any(
        word in VERB_WORDS or (len(word) > 3 and word.endswith(("ed", "ing", "s"))) for word in words
    )
