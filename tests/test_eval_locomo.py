"""scripts/eval_locomo.py on a tiny LoCoMo-shaped file the test writes, run as a developer runs it.

`--pipeline` saves each pair of turns as an exchange with extract through the door's real job path
(the deterministic librarian, no embedder here so the run takes seconds) and scores a hit through
the records' provenance: a planted question whose evidence is the reply of one pair must find it
first, through the fact the librarian distils from that pair (a fact comes before its exchange).
`--loco` tunes on one conversation and measures the other.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import REPO

SCRIPT = REPO / "scripts" / "eval_locomo.py"
RUN_TIMEOUT_S = 120.0
#: a reply the deterministic librarian keeps as a fact (so the planted hit is a fact, not a document)
PLANTED = (
    "Researching adoption agencies — it's been a dream to have a family and give a loving home to kids "
    "who need it."
)


def turn(speaker: str, dia_id: str, text: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text}


def sample(sample_id: str, word: str) -> dict[str, Any]:
    """Two sessions of a few turns; questions on a planted reply and on a turn of the first session."""
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Melanie",
            "speaker_b": "Caroline",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                turn("Melanie", "D1:1", "Hey Caroline, how was your week?"),
                turn("Caroline", "D1:2", "Busy! I went to a pottery class on Monday."),
                turn("Melanie", "D1:3", f"I finally bought a {word} for the band."),
                turn("Caroline", "D1:4", "That is great news, well done."),
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [
                turn(
                    "Melanie",
                    "D2:1",
                    "My kids are so excited about summer break! We are thinking about going camping next "
                    "month. Any fun plans for the summer?",
                ),
                turn("Caroline", "D2:2", PLANTED),
                turn("Melanie", "D2:3", "Good luck with it, talk soon."),
            ],
        },
        "qa": [
            {
                "question": "What was Caroline researching?",
                "answer": "adoption agencies",
                "evidence": ["D2:2"],
                "category": 4,
            },
            {
                "question": f"When did Melanie buy the {word}?",
                "answer": "May 2023",
                "evidence": ["D1:3"],
                "category": 2,
            },
            {
                "question": "What did Caroline say about skiing?",
                "adversarial_answer": "x",
                "evidence": ["D1:2"],
                "category": 5,
            },
            {"question": "Where did they meet?", "answer": "?", "evidence": ["D9:9"], "category": 4},
        ],
    }


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    data = tmp_path / "locomo.json"
    data.write_text(
        json.dumps([sample("conv-a", "saxophone"), sample("conv-b", "trombone")]), encoding="utf-8"
    )
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(data), "--embedder", "none", *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def row(output: str, label: str) -> list[str]:
    """A table row's cells: n, then recall at 1, 5, 10, 25."""
    line = next(line for line in output.splitlines() if line.startswith(label))
    return line[len(label) :].replace("|", " ").split()


def test_pipeline_scores_a_planted_question_through_the_fact_and_its_exchange(tmp_path: Path) -> None:
    done = run(tmp_path, "--pipeline", "--modes", "hybrid")
    assert done.returncode == 0, done.stderr
    stored = re.findall(
        r"stored (conv-\w): (\d+) turns, (\d+) exchanges, (\d+) facts, (\d+) questions", done.stderr
    )
    # 7 turns pair up as 3 exchanges and a lone last turn; the planted reply gives at least one fact
    assert [(name, int(t), int(e), int(q)) for name, t, e, _, q in stored] == [
        ("conv-a", 7, 4, 2),
        ("conv-b", 7, 4, 2),
    ]
    assert all(int(facts) >= 1 for *_, facts, _ in stored)
    assert "exchanges (pairs of turns) saved with extract" in done.stdout
    assert "evidence ids that name no turn: 2" in done.stdout  # D9:9, once per conversation
    n, *recalls = row(done.stdout, "4 single-hop")
    assert int(n) == 2  # the planted question of each conversation (D9:9's names no turn)
    assert [float(r) for r in recalls] == [1.0, 1.0, 1.0, 1.0]
    n, *recalls = row(done.stdout, "overall")
    assert int(n) == 4 and all(0.0 <= float(r) <= 1.0 for r in recalls)
    assert float(recalls[2]) == 1.0  # every question's evidence is among 4 exchanges and their facts


def test_loco_reports_each_held_out_conversation_beside_in_sample(tmp_path: Path) -> None:
    done = run(tmp_path, "--loco")
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^(conv-\w)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", done.stdout, re.MULTILINE)
    assert [(name, int(n)) for name, n, *_ in rows] == [("conv-a", 2), ("conv-b", 2)]
    figures = [float(x) for *_, today, inside, held in rows for x in (today, inside, held)]
    assert all(0.0 <= x <= 1.0 for x in figures)
    # the two conversations are alike: the planted questions are found whatever the constants
    assert figures == [1.0] * 6
    assert "tuned on all 2 (in-sample) picks:" in done.stdout
    assert re.search(r"^mean of convs\s+1\.000\s+1\.000\s+1\.000$", done.stdout, re.MULTILINE)


def test_pipeline_with_generated_facts_is_refused_in_one_line(tmp_path: Path) -> None:
    done = run(tmp_path, "--pipeline", "--with-facts")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["eval_locomo: --pipeline and --with-facts do not mix"]


def test_a_rewrite_mode_searches_the_stand_in_statement_beside_the_question(tmp_path: Path) -> None:
    done = run(tmp_path, "--modes", "keyword,keyword+rw")
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if line.startswith("recall"))
    assert header.split("|")[1].strip() == "keyword" and header.split("|")[2].strip() == "keyword+rw"
    overall = next(line for line in done.stdout.splitlines() if line.startswith("overall"))
    plain, rewritten = (block.split() for block in overall.split("|")[1:3])
    assert plain == rewritten == ["1.000"] * 4  # the planted questions are found either way
    unknown = run(tmp_path, "--modes", "hybrid+typo")
    assert unknown.returncode == 2 and "unknown mode 'hybrid+typo'" in unknown.stderr


def test_the_stand_in_rule_drops_the_questions_scaffolding() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("rewrite_standin", REPO / "scripts" / "rewrite_standin.py")
    assert spec is not None and spec.loader is not None
    standin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(standin)
    assert standin.statement_for("When did Melanie buy the saxophone?") == "Melanie buy the saxophone."
    assert standin.statement_for("How many kids does Melanie have?") == "Kids does Melanie have."
    assert standin.statement_for("what was Caroline researching") == "Caroline researching."
    assert standin.statement_for("Why?") == "Why?"


def test_one_run_on_sqlite_and_postgresql_compares_their_recall(tmp_path: Path, postgres: Any) -> None:
    done = run(tmp_path, "--modes", "hybrid,keyword", "--db", f"sqlite,{postgres.url}")
    assert done.returncode == 0, done.stderr
    labels = [line for line in done.stdout.splitlines() if line.startswith("store: ")]
    assert labels[0] == "store: sqlite"
    assert re.fullmatch(r"store: postgresql \d+\.\d+", labels[1]), labels
    tables = done.stdout.split("store: ")[1:]
    assert row(tables[0], "overall") == row(tables[1], "overall")  # the same questions, the same recall
    compared = dict(
        re.findall(
            r"^(hybrid|keyword)\s+sqlite [\d.]+ \(\+0\.000, 0 of 4 questions\); (.*)$", done.stdout, re.M
        )
    )
    assert set(compared) == {"hybrid", "keyword"}
    assert all(
        re.fullmatch(r"postgresql \S+ 1\.000 \([+-]0\.000, 0 of 4 questions\)", v) for v in compared.values()
    )
    # the run's own database is dropped when it ends
    assert postgres.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", ("locomo_%",)) == []


def test_a_store_it_cannot_use_is_refused_in_one_line(tmp_path: Path) -> None:
    done = run(tmp_path, "--db", "mysql://root:hunter2@db/memories")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "eval_locomo: --db takes sqlite, pgserver or a postgresql:// URL (got 'mysql://root:***@db/memories')"
    ]
