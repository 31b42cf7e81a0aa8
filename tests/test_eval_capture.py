"""scripts/eval_capture.py: a tiny capture file replayed through the real door the script starts.

The script runs as a subprocess, as a developer runs it; the door it starts is the real
`bli-memory-door serve`. The LLM librarian's endpoint is the one stand-in: a loopback HTTP server that
answers every chat completion with the same facts.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import REPO, served_locally

SCRIPT = REPO / "scripts" / "eval_capture.py"
RUN_TIMEOUT_S = 120.0
PROJECT = "Alpha Svc/Core"
TAG = "repo_alpha_svc_core__" + hashlib.sha256(PROJECT.encode()).hexdigest()[:16]
OTHER = "Beta Web"
CORRECTED = "4.2.7"
PINNED_QUERY = "which zq-broker release is pinned?"
#: our own questions with nothing stored: one near a stored fact (the hook may show its rows), one not
UNANSWERED = {
    PROJECT: ["which zq-broker release does the billing service pin?", "who designed the audit log schema?"],
    "a project of another file": ["is never asked here?"],
}
EXCHANGES = [
    {
        "id": "t1",
        "project": PROJECT,
        "exchange": (
            "User: The settlement job needs a lock of its own, and pin zq-broker 4.2.7 while you are at "
            "it.\n\nAssistant: Done. `payments/worker.py` now takes `pg_try_advisory_lock(7301)` before "
            "the settlement job runs, and `requirements.in` pins `zq-broker==4.2.7`."
        ),
        "facts": [{"query": "which postgres lock number does settlement take?", "key": ["7301"]}],
        "must_not": [],
        "noise": False,
    },
    {
        "id": "t2",
        "project": PROJECT,
        "exchange": (
            "User: thanks, that fixed it!\n\nAssistant: Glad to hear it. Nothing else needs changing "
            "here, and the branch is ready whenever you are."
        ),
        "facts": [],
        "must_not": [],
        "noise": True,
    },
    {
        "id": "t3",
        "project": PROJECT,
        "exchange": (
            "User: We moved off the old broker client: pin zq-broker 5.0.1 everywhere now.\n\n"
            "Assistant: Done. `requirements.in` now pins `zq-broker==5.0.1`, and `requirements.txt` "
            "is recompiled with `pip-compile`."
        ),
        "facts": [{"query": PINNED_QUERY, "key": ["zq-broker", "5.0.1"], "lasting": True}],
        "must_not": [CORRECTED],  # the earlier pin, corrected here
        "noise": False,
    },
    {
        # another project pins the same library: Alpha's question asked in Beta's space finds a row
        # that does not answer it (an unrelated row)
        "id": "b1",
        "project": OTHER,
        "exchange": (
            "User: Pin zq-broker 3.1.0 in the web app, the newer client breaks our websocket relay.\n\n"
            "Assistant: Done. `package.json` now pins `zq-broker@3.1.0`; the relay tests pass again."
        ),
        "facts": [{"query": "which zq-broker release does the web app pin?", "key": ["3.1.0"]}],
        "must_not": [],
        "noise": False,
    },
]
LLM_FACTS = [
    "Settlement takes the Postgres advisory lock 7301.",
    "We pin zq-broker 5.0.1.",
    "The web app pins zq-broker 3.1.0.",
]


def write_capture(folder: Path) -> Path:
    path = folder / "capture.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in EXCHANGES), encoding="utf-8")
    return path


def write_unanswered(folder: Path) -> Path:
    path = folder / "unanswered.json"
    path.write_text(json.dumps(UNANSWERED), encoding="utf-8")
    return path


def script_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "home" / "share")}
    for name in ("BLI_MEMORY_LLM_URL", "BLI_MEMORY_LLM_MODEL", "BLI_MEMORY_LLM_KEY", "BLI_MEMORY_EMBEDDER"):
        env.pop(name, None)
    env.update(extra)
    return env


def run_script(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=env or script_env(tmp_path),
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def columns(stdout: str) -> list[str]:
    """The librarians the table's header names."""
    header = next(line for line in stdout.splitlines() if line.startswith("| |"))
    return [part.strip() for part in header.strip().strip("|").split("|")][1:]


def cells(stdout: str, label: str) -> list[str]:
    """The cells of the table row whose label starts with `label`."""
    for line in stdout.splitlines():
        parts = [part.strip() for part in line.strip().strip("|").split("|")]
        if parts and parts[0].startswith(label):
            return parts[1:]
    raise AssertionError(f"no row {label!r} in:\n{stdout}")


def word_runs(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + 6]) for i in range(len(words) - 5)}


def test_a_tiny_capture_file_is_scored_through_the_real_door(tmp_path: Path) -> None:
    unanswered = write_unanswered(tmp_path)
    done = run_script(
        tmp_path, str(write_capture(tmp_path)), "--verbose", "--halves", "--unanswered", str(unanswered)
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("capture: capture.jsonl, 4 exchanges (1 noise), 3 facts, 2 projects; embedder onnx")
    # no LLM is configured; the halves are the projects in file order
    assert columns(out) == ["capture.jsonl", "capture.jsonl, first half", "capture.jsonl, second half"]
    recall = re.fullmatch(r"(\d\.\d\d\d) \((\d)/3\)", cells(out, "facts found again")[0])
    assert recall is not None
    assert float(recall.group(1)) == int(recall.group(2)) / 3
    assert 0.0 < float(cells(out, "MRR")[0]) <= float(recall.group(1))
    assert cells(out, "jobs failed") == ["0 of 4", "0 of 3", "0 of 1"]
    # what the prompt hook shows: at most what the door finds, each fact marked when it is not
    shown = re.fullmatch(r"(\d\.\d\d\d) \((\d)/3\)", cells(out, "shown by the prompt hook")[0])
    assert shown is not None and int(shown.group(2)) <= int(recall.group(2))
    hidden = len(re.findall(r"^  found at \d \(\w+\) \(not shown by the prompt hook\)", out, re.MULTILINE))
    assert int(shown.group(2)) == int(recall.group(2)) - hidden
    # the identifier stated in the exchange is stored as a fact and found again
    assert re.search(r'^  \+ stored ".*7301', out, re.MULTILINE)
    # found again: first through a fact or through the stored exchange (a later correction relinks
    # the fact to the exchange that changed it, so t1's own exchange may rank first)
    assert re.search(
        r'^  found at \d \((?:memory|document)\)(?: \(not shown by the prompt hook\))? \[7301\] "which postgres',
        out,
        re.MULTILINE,
    )
    # every project has its own space, named as the Stop hook would name a repository's
    assert f"\n{TAG}: " in out
    at_end = out[out.index(f"\n{TAG}: ") :]
    # wrong facts: the facts still stating the corrected pin (the space is smaller than a search's 10)
    stale = [line for line in at_end.splitlines() if CORRECTED in line]
    assert cells(out, "wrong facts")[0] == str(len(stale))
    assert len(re.findall(r"^  WRONG .*4\.2\.7", out, re.MULTILINE)) == len(stale)
    outcome = "still current 1" if stale else "still current 0"
    assert re.fullmatch(rf"[01] of 1 \(old fact {outcome}, never stored [01]\)", cells(out, "corrections")[0])
    # noise kept: stored facts that repeat six words of the noise exchange in a row
    kept = re.findall(r'^  NOISE KEPT (".*")$', out, re.MULTILINE)
    assert cells(out, "noise facts kept")[0] == f"{len(kept)} (from {1 if kept else 0} of 1)"
    noise_runs = word_runs(str(EXCHANGES[1]["exchange"]))
    assert all(word_runs(json.loads(fact)) & noise_runs for fact in kept)
    assert "Traceback" not in done.stderr


QUESTION_WORDS = "what which who whom whose when where why how is are was were do does did can could should would will shall"


def _opens_a_question(text: str) -> bool:
    """A first word that asks, in a first sentence that ends in neither a full stop nor `!`."""
    first = re.match(r"^.*?[.!?](?=\s|$)", text, re.DOTALL)
    word = re.sub(r"[^a-z]", "", text.split()[0].lower())
    return word in QUESTION_WORDS.split() and not (first is not None and first.group()[-1] in ".!")


def test_what_reaches_the_agent_is_read_from_the_real_hooks_blocks(tmp_path: Path) -> None:
    unanswered = write_unanswered(tmp_path)
    done = run_script(
        tmp_path, str(write_capture(tmp_path)), "--verbose", "--halves", "--unanswered", str(unanswered)
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # unrelated rows: each of the 3 queries asked in the other project's space; a pin question asked
    # in the other project's space meets that project's own pin, a row that does not answer it
    elsewhere = [int(n) for n in re.findall(r"^  (\d+) rows? unrelated for ", out, re.MULTILINE)]
    rows = sum(elsewhere)
    assert rows >= 1
    named = f"{rows} row" if rows == 1 else f"{rows} rows"
    assert cells(out, "unrelated rows per prompt")[0] == f"{rows / 3:.2f} ({named} / 3 prompts)"
    # questions with nothing stored: the file's questions of this capture file's projects only
    noisy = re.findall(r'^  (\d+) rows? shown for (".*"), whose answer is not stored$', out, re.MULTILINE)
    assert {json.loads(question) for _, question in noisy} <= set(UNANSWERED[PROJECT])
    assert cells(out, "questions with nothing stored")[:3] == [
        f"{len(noisy)} of 2",
        f"{len(noisy)} of 2",
        "–",
    ]
    # the session-start block, line by line, each flagged with what is wrong with it
    block = re.findall(r"^  \| (\".*\")(?: \(([a-z, ]+)\))?$", out, re.MULTILINE)
    assert block, out
    texts = [json.loads(text) for text, _ in block]
    flags = [set(flag.split(", ")) if flag else set() for _, flag in block]
    assert [("superseded" in f) for f in flags] == [CORRECTED in text for text in texts]
    assert [("question" in f) for f in flags] == [
        text.endswith("?") or _opens_a_question(text) for text in texts
    ]
    counts = [sum(1 for f in flags if name in f) for name in ("superseded", "question", "fragment")]
    assert (
        cells(out, "session-start block")[0]
        == f"{counts[0]} / {counts[1]} / {counts[2]} of {len(block)} lines"
    )
    # the lasting fact (the pin) is at session start when a line of the block holds both its keys
    lasting = any("zq-broker" in text.lower() and "5.0.1" in text for text in texts)
    assert cells(out, "lasting facts in the session-start block")[:3] == [
        "1.000 (1/1)" if lasting else "0.000 (0/1)",
        "1.000 (1/1)" if lasting else "0.000 (0/1)",
        "–",  # Beta marks no fact lasting
    ]
    assert ("LASTING NOT AT SESSION START" in out) is not lasting
    assert cells(out, "bar: lasting facts")[:3] == ["met" if lasting else "not met"] * 2 + ["–"]
    quiet = (2 - len(noisy)) / 2 >= 0.8
    assert cells(out, "bar: nothing shown")[0] == ("met" if quiet else "not met")
    assert cells(out, "bar: shown")[0] in ("met", "not met")


def test_the_hooks_blocks_are_read_and_judged_by_simple_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("capture_blocks", REPO / "scripts" / "capture_blocks.py")
    assert spec is not None and spec.loader is not None
    blocks = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "capture_blocks", blocks)  # its dataclass looks itself up there
    spec.loader.exec_module(blocks)
    recall = (
        "<bli-memory-recall> [bli]\n[bli] Memories from this space (t) that may bear on the prompt:\n"
        "[bli] 1. [<1h · cosine similarity 0.71 · id m1] We pin zq-broker 5.0.1.\n"
        "[bli] 2. [<1h · document · id m2] User: pin it\n[bli]    Assistant: done\n"
        "</bli-memory-recall> [bli]\n"
    )
    assert blocks.recall_rows(recall) == [
        "1. [<1h · cosine similarity 0.71 · id m1] We pin zq-broker 5.0.1.",
        "2. [<1h · document · id m2] User: pin it\nAssistant: done",
    ]
    assert blocks.recall_rows("") == []
    start = (
        "<bli-memory-context> [bli]\n[bli] What this space (t) remembers:\n[bli] ## User Profile\n"
        "[bli] - We pin zq-broker 5.0.1 everywhere.\n[bli] ## Recent Context\n"
        "[bli] - [<1h · id m3] which broker do we use?\n</bli-memory-context> [bli]\n"
    )
    assert blocks.briefing_lines(start) == ["We pin zq-broker 5.0.1 everywhere.", "which broker do we use?"]
    assert blocks.is_question("which broker do we use") and blocks.is_question("The broker is what?")
    assert blocks.is_question("Where does it live? In ~/.config.")
    assert not blocks.is_question("We pin zq-broker 5.0.1 everywhere.")
    assert not blocks.is_question("When you write tests, use AssertJ.")
    assert blocks.is_fragment("Vault sidecar.")  # under three words
    assert blocks.is_fragment("The Vault agent sidecar file")  # no verb-like word
    assert not blocks.is_fragment("Settlement takes the advisory lock 7301.")
    assert not blocks.is_fragment("Pin zq-broker to 5.0.1 everywhere")
    assert not blocks.is_fragment("We're dropping Sidekiq.")


@pytest.mark.parametrize(
    "content, reason",
    [(None, "does not exist"), ('{"id": "x"}\n', "line 1: project must be a non-empty string")],
)
def test_a_missing_or_bad_capture_file_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, reason: str
) -> None:
    path = tmp_path / "capture.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    done = run_script(tmp_path, str(path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("eval_capture: ")
    assert str(path) in done.stderr and reason in done.stderr


def test_several_capture_files_get_a_column_each_and_projects_name_those_of_any_file(tmp_path: Path) -> None:
    first = write_capture(tmp_path)
    second = tmp_path / "second.jsonl"
    second.write_text(json.dumps(EXCHANGES[-1]) + "\n", encoding="utf-8")  # Beta's exchange alone
    done = run_script(tmp_path, str(first), str(second), "--embedder", "none")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        "capture: capture.jsonl, 4 exchanges (1 noise), 3 facts, 2 projects; embedder none; "
        "0 of the facts corrected by a later exchange",
        "capture: second.jsonl, 1 exchanges (0 noise), 1 facts, 1 projects; embedder none; "
        "0 of the facts corrected by a later exchange",
    ]
    assert columns(done.stdout) == ["capture.jsonl", "second.jsonl"]
    assert cells(done.stdout, "jobs failed") == ["0 of 4", "0 of 1"]
    # one project alone has no other project's space to ask in
    assert cells(done.stdout, "unrelated rows per prompt")[1] == "–"
    only_beta = run_script(tmp_path, str(first), str(second), "--embedder", "none", "--projects", OTHER)
    assert only_beta.returncode == 0, only_beta.stderr
    assert cells(only_beta.stdout, "jobs failed") == ["0 of 1", "0 of 1"]
    unknown = run_script(tmp_path, str(first), str(second), "--projects", "Gamma")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr == "eval_capture: --projects: no exchange belongs to Gamma\n"


@pytest.mark.parametrize("content, reason", [(None, "does not exist"), ("[1]", "must hold a JSON object")])
def test_a_missing_or_bad_file_of_unanswered_questions_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, reason: str
) -> None:
    path = tmp_path / "unanswered.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    done = run_script(tmp_path, str(write_capture(tmp_path)), "--unanswered", str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("eval_capture: --unanswered: ")
    assert reason in done.stderr


class _ChatStandIn(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        content = json.dumps({"facts": LLM_FACTS})
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def chat_endpoint() -> Iterator[str]:
    with served_locally(_ChatStandIn) as url:
        yield url


def test_a_configured_llm_librarian_gets_a_column_beside_the_deterministic_one(
    tmp_path: Path, chat_endpoint: str
) -> None:
    env = script_env(tmp_path, BLI_MEMORY_LLM_URL=chat_endpoint, BLI_MEMORY_LLM_MODEL="stand-in")
    done = run_script(tmp_path, str(write_capture(tmp_path)), "--embedder", "none", env=env)
    assert done.returncode == 0, done.stderr
    assert columns(done.stdout) == ["deterministic", "llm (stand-in)"]
    assert cells(done.stdout, "LLM answers that fell back") == ["-", "0"]
    # the stand-in's facts hold both keys: the LLM door found every fact
    assert cells(done.stdout, "facts found again")[1] == "1.000 (3/3)"
    assert cells(done.stdout, "jobs failed") == ["0 of 4", "0 of 4"]


def test_the_rewrite_stand_in_gets_a_column_whose_jobs_fall_back_to_the_deterministic_librarian(
    tmp_path: Path,
) -> None:
    done = run_script(tmp_path, str(write_capture(tmp_path)), "--embedder", "none", "--rewrite-standin")
    assert done.returncode == 0, done.stderr
    assert columns(done.stdout) == ["deterministic", "deterministic + rewrite (stand-in rule)"]
    # the stand-in refuses extraction: every job of the second door ran the deterministic librarian
    jobs = cells(done.stdout, "jobs: added")
    assert jobs[0] == jobs[1]
    assert cells(done.stdout, "LLM answers that fell back") == ["-", "4"]
    assert cells(done.stdout, "jobs failed") == ["0 of 4", "0 of 4"]


@pytest.fixture
def capture(monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, ModuleType]:
    """The report's data and scoring modules (scripts/capture_data.py, capture_report.py), imported as
    eval_capture.py imports them, for tests that build a run by hand."""
    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    return importlib.import_module("capture_data"), importlib.import_module("capture_report")


def _row(data: ModuleType, memory_id: str, content: str, previous: str | None = None) -> object:
    """One current memory row as the door's database holds it."""
    return data.Row(memory_id, content, "memory", 1, previous, False)


def test_a_lasting_fact_a_later_exchange_corrects_is_not_counted_as_missing(
    capture: tuple[ModuleType, ModuleType],
) -> None:
    data, report = capture
    owner = data.Fact("who owns the SMS account?", ("Dana Whitfield",), lasting=True)
    zone = data.Fact("how is a time zone stored?", ("IANA",), lasting=True)
    first = data.Exchange("x1", "p", "User: Dana Whitfield owns it", (owner, zone), (), False)
    correction = data.Exchange("x2", "p", "User: Emeka owns it now", (), ("Whitfield",), False)
    other = data.Exchange("x3", "q", "User: nothing", (), ("IANA",), False)  # another project
    run = data.Run("deterministic")
    run.exchanges = [data.ExchangeResult(e, "t", "done") for e in (first, correction, other)]
    run.briefings = {"p": ["Time zones are IANA identifiers."]}
    assert data.corrected_later(owner, [correction]) and not data.corrected_later(zone, [correction])
    assert not data.corrected_later(owner, [first])  # a must_not names a value only of its own exchange
    assert data.in_force_flags([first, correction, other]) == [(False, True), (), ()]
    assert report.lasting_in_briefing(run, "p") == [(zone, True)]


def test_a_fact_a_later_exchange_corrects_is_scored_apart_from_the_facts_in_force(
    capture: tuple[ModuleType, ModuleType],
) -> None:
    data, report = capture
    old = data.Fact("who owns the SMS account?", ("Dana Whitfield",))
    new = data.Fact("who owns the SMS account?", ("Emeka Obi",))
    port = data.Fact("which port does the api listen on?", ("8443",))
    first = data.Exchange("x1", "p", "User: Dana Whitfield owns it, port 8443", (old, port), (), False)
    correction = data.Exchange("x2", "p", "User: Emeka Obi owns it now", (new,), ("Whitfield",), False)
    run = data.Run("deterministic")
    run.exchanges = [data.ExchangeResult(e, "t", "done") for e in (first, correction)]
    # the old owner is found and shown, the new one found at 2 and not shown, the port missed
    run.exchanges[0].facts = [
        data.FactResult(old, 1, "memory", "", shown=True),
        data.FactResult(port, None, None, ""),
    ]
    run.exchanges[1].facts = [data.FactResult(new, 2, "memory", "")]
    assert report.corrected_count([first, correction]) == 1
    assert [f.fact for f in report.facts_in_force(run, ["p"])] == [port, new]
    summary = report.summarise(run)
    assert (summary.facts, summary.found, summary.shown, summary.mrr) == (2, 1, 0, 0.25)
    assert (summary.all_facts, summary.all_found, summary.corrected_shown) == (3, 2, 1)
    table = report.table([report.Column("c", run, frozenset({"p"}))])
    assert cells(table, "facts found again") == ["0.500 (1/2)"]
    assert cells(table, "every fact, corrected ones too") == ["0.667 (2/3)"]
    assert cells(table, "corrected facts whose old value") == ["1 of 1"]
    assert "[Dana Whitfield; corrected later]" in report.details(run)


def test_a_fact_the_correcting_exchange_adds_may_name_the_old_value_it_retires(
    capture: tuple[ModuleType, ModuleType],
) -> None:
    data, report = capture
    first = data.Exchange("x1", "p", "User: alerts go to Kwame", (), (), False)
    correction = data.Exchange("x2", "p", "User: Kwame left, Ines Duarte owns it now", (), ("Kwame",), False)

    old = _row(data, "m1", "Alerts go to Kwame.")
    retiring = _row(data, "m2", "Kwame left, Ines Duarte owns alerts now.")
    run = data.Run("deterministic")
    run.exchanges = [data.ExchangeResult(e, "t", "done") for e in (first, correction)]
    run.exchanges[1].added = [retiring]
    run.exchanges[1].old_current_before = {"Kwame": True}
    run.briefings = {"p": ["Kwame left, Ines Duarte owns alerts now."]}
    # the retiring fact alone: superseded, and its line is no superseded value
    run.spaces = {"t": {"m2": retiring}}
    assert report.correction_outcomes(run) == [("x2", "Kwame", "superseded")]
    assert report.line_verdicts(run, "p") == [("Kwame left, Ines Duarte owns alerts now.", [])]
    # the old fact still current beside it: still current
    run.spaces = {"t": {"m1": old, "m2": retiring}}
    assert report.correction_outcomes(run) == [("x2", "Kwame", "still current")]
    run.briefings = {"p": ["Alerts go to Kwame."]}
    assert report.line_verdicts(run, "p") == [("Alerts go to Kwame.", ["superseded"])]


def test_a_version_the_correcting_exchange_writes_in_its_own_words_is_its_statement(
    capture: tuple[ModuleType, ModuleType],
) -> None:
    """The job may write the correcting statement as a new version of the old fact, not beside it: in
    the exchange's own words it is the exchange's statement all the same; a rewrite of the old fact
    (its own words kept) that still names the old value is not."""
    data, report = capture
    first = data.Exchange("x1", "p", "User: we run Airflow 2.8.1 on MWAA", (), (), False)
    text = "User: checked, we're not on 2.8.1 any more: MWAA has 2.9.2"
    correction = data.Exchange("x2", "p", text, (), ("2.8.1",), False)

    old = _row(data, "m1", "We run Airflow 2.8.1 on MWAA.")
    own = _row(data, "m2", "Checked, we're not on 2.8.1 any more: MWAA has 2.9.2.", "m1")
    rewritten = _row(data, "m3", "We run Airflow 2.9.2 on MWAA, constraints 2.8.1.", "m1")
    result = data.ExchangeResult(correction, "t", "done", updated=[(old, own)])
    assert result.own_statements() == [own]
    run = data.Run("deterministic")
    run.exchanges = [data.ExchangeResult(first, "t", "done"), result]
    result.old_current_before = {"2.8.1": True}
    run.spaces = {"t": {"m2": own}}
    assert report.correction_outcomes(run) == [("x2", "2.8.1", "superseded")]
    result.updated = [(old, rewritten)]
    assert result.own_statements() == []
    run.spaces = {"t": {"m3": rewritten}}
    assert report.correction_outcomes(run) == [("x2", "2.8.1", "still current")]


def test_relevance_from_a_file_of_its_own_scores_the_run_and_a_bad_file_is_one_line(tmp_path: Path) -> None:
    """--relevance FILE: the door scores with those calibrations (fit_relevance.py --held-out writes
    per capture file the fit on the others, so that file is scored held out); the header names the
    file."""
    from bli_memory.door import relevance

    entry = json.loads(relevance.COEFFICIENTS_FILE.read_text(encoding="utf-8"))["embedders"]["none"]
    silent = tmp_path / "fit-without-this.json"  # a floor no hit reaches: the hook shows nothing
    silent.write_text(json.dumps({"embedders": {"none": {**entry, "floor": 1.0}}}), encoding="utf-8")
    capture = str(write_capture(tmp_path))
    unanswered = str(write_unanswered(tmp_path))
    done = run_script(
        tmp_path, capture, "--embedder", "none", "--relevance", str(silent), "--unanswered", unanswered
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].endswith("; relevance from fit-without-this.json")
    assert cells(done.stdout, "shown by the prompt hook")[0] == "0.000 (0/3)"
    assert cells(done.stdout, "questions with nothing stored") == [f"0 of {len(UNANSWERED[PROJECT])}"]
    bad = tmp_path / "bad.json"
    bad.write_text("[]", encoding="utf-8")
    refused = run_script(tmp_path, capture, "--relevance", str(bad))
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == f'eval_capture: --relevance: {bad} holds no "embedders" object of calibrations\n'
