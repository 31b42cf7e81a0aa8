"""docs/door-api.md is scripts/door_api.md.template filled with real calls' examples
(`scripts/door_api_examples.py`): the page's prose and the template's are the same, so the next run of
the script keeps every word of the page."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import REPO

SCRIPT = REPO / "scripts" / "door_api_examples.py"


def test_the_page_is_the_template_filled_with_its_own_examples() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
