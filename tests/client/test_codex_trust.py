"""Codex hook trust: `status` reads it from Codex's own files, and the real Codex CLI agrees.

Codex runs a hook from ~/.codex/hooks.json only once the person has trusted it (`/hooks`), and
records that in its config.toml. The unit tests hold `bli_memory.install.codex_trust` to fixtures in Codex's
real format (hashes and tables written by Codex 0.171 itself). The end-to-end tests run the real
Codex CLI, which `scripts/test` installs from npm (pinned) into .venv/codex-cli and names in
$BLI_MEMORY_CODEX_CLI: `codex exec` offline, against a loopback stand-in for the model API that
refuses every request, fires SessionStart and UserPromptSubmit and then stops; whether our hooks
ran shows in their hourly counters under the temporary HOME. Trust is written through Codex's own
app-server (`hooks/list`, then `config/batchWrite` of `hooks.state."<key>".trusted_hash`), as its
`/hooks` review does.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bli_memory.install import codex_trust
from tests.client.helpers import (
    RefusingModelApi,
    codex_exec,
    codex_hooks,
    hook_runs,
    run_in_home,
    trust_like_codex,
)

PY_PREFIX = "/opt/venv/bin/python3 -c 'import sys; from bli_memory.cli import main; sys.exit(main())' hook "

#: handlers and the `currentHash` Codex 0.171 gave each one (`codex app-server`, `hooks/list`).
CODEX_HASHES = [
    (
        "SessionStart",
        None,
        {"type": "command", "command": PY_PREFIX + "session-start --host codex", "timeout": 30},
        "sha256:31be74836c43304a0304ac6340c2e50f9599158de8d738336ce1ef7681b8a42b",
    ),
    (
        "SessionStart",
        "startup|resume",
        {
            "type": "command",
            "command": "/usr/bin/bli-memory-mcp hook session-start --host codex",
            "statusMessage": "Recalling — “memory”",
            "additionalContextLimit": 4000,
        },
        "sha256:82b2d751341843a58d545300c2d04893a2bfb3fbec4a016a9adf71b31b1ea1a2",
    ),
    (
        "UserPromptSubmit",
        "ignored",
        {"type": "command", "command": PY_PREFIX + "prompt --host codex", "timeout": 0, "async": False},
        "sha256:f724a5da4dcc1aec2c1a22d8822fe2ec12a5f03df92d746ca3ed95eab168cb68",
    ),
    (
        "Stop",
        None,
        {
            "type": "command",
            "command": "bli-memory-mcp hook stop --host codex",
            "timeout": 30,
            "additionalContextLimit": 10,
            "commandWindows": "x",
        },
        "sha256:c19a308b351e3593566d92e30612dbe19b2aa8cbadbe0b8bdd97854a25103962",
    ),
]

HOOKS_PATH = "/home/me/.codex/hooks.json"
OUR_HOOKS_DOC: dict[str, Any] = {
    "hooks": {
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "/usr/bin/notify-start"}]},
            {
                "hooks": [
                    {"type": "command", "command": PY_PREFIX + "session-start --host codex", "timeout": 30}
                ]
            },
        ],
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": PY_PREFIX + "prompt --host codex", "timeout": 5}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": PY_PREFIX + "stop --host codex", "timeout": 30}]}],
    }
}


def key_and_hash(doc: dict[str, Any], event: str, group_index: int) -> tuple[str, str]:
    group = doc["hooks"][event][group_index]
    key = codex_trust.hook_key(HOOKS_PATH, event, group_index, 0)
    return key, codex_trust.hook_hash(event, group.get("matcher"), group["hooks"][0])


def codex_config(states: dict[str, str], extra: str = "") -> str:
    """config.toml as Codex's `/hooks` review leaves it: one `[hooks.state."<key>"]` table per hook."""
    text = '[mcp_servers.bli-memory]\ncommand = "/usr/bin/bli-memory-mcp"\nargs = []\n'
    for key, body in states.items():
        text += f'\n[hooks.state."{key}"]\n{body}\n'
    return text + extra


def trusted_states(doc: dict[str, Any]) -> dict[str, str]:
    places = [("SessionStart", 1), ("UserPromptSubmit", 0), ("Stop", 0)]
    return {
        key: f'trusted_hash = "{digest}"' for key, digest in (key_and_hash(doc, *place) for place in places)
    }


# --------------------------------------------------------------------------- the parsing, pure


@pytest.mark.parametrize(("event", "matcher", "handler", "codex_hash"), CODEX_HASHES)
def test_hook_hash_is_the_one_codex_computes(
    event: str, matcher: object, handler: dict[str, Any], codex_hash: str
) -> None:
    assert codex_trust.hook_hash(event, matcher, handler) == codex_hash


@pytest.mark.parametrize("use_tomllib", [True, False])
def test_every_hook_trusted_in_codex_format_is_trusted(use_tomllib: bool) -> None:
    config = codex_trust.parse_config(codex_config(trusted_states(OUR_HOOKS_DOC)), use_tomllib=use_tomllib)
    verdict = codex_trust.judge(OUR_HOOKS_DOC, HOOKS_PATH, config)
    assert verdict.state == "trusted" and verdict.missing == ()
    assert [(hook.event, hook.status) for hook in verdict.hooks] == [
        ("SessionStart", "trusted"),
        ("UserPromptSubmit", "trusted"),
        ("Stop", "trusted"),
    ]
    assert verdict.hooks[0].key == HOOKS_PATH + ":session_start:1:0"  # the person's own hook is group 0
    assert codex_trust.describe(verdict, "~/.codex/hooks.json", "~/.codex/config.toml") == (
        "hooks trusted (3 of 3)"
    )


@pytest.mark.parametrize("use_tomllib", [True, False])
def test_untrusted_changed_and_turned_off_hooks_are_told_apart(use_tomllib: bool) -> None:
    states = trusted_states(OUR_HOOKS_DOC)
    _, prompt_key, stop_key = states
    changed = json.loads(json.dumps(OUR_HOOKS_DOC))
    changed["hooks"]["SessionStart"][1]["hooks"][0]["command"] = (
        "/elsewhere/bli-memory-mcp hook session-start"
    )
    states[prompt_key] = f"{states[prompt_key]}\nenabled = false"
    del states[stop_key]
    config = codex_trust.parse_config(codex_config(states), use_tomllib=use_tomllib)
    verdict = codex_trust.judge(changed, HOOKS_PATH, config)
    assert verdict.state == "untrusted"
    assert [hook.status for hook in verdict.hooks] == ["modified", "disabled", "untrusted"]
    assert codex_trust.describe(verdict, "h", "c") == (
        "hooks installed but not trusted (0 of 3 trusted; 1 changed since trusted; 1 turned off in /hooks)"
        " — run codex, open /hooks and trust them"
    )


def test_trust_is_keyed_by_the_hooks_json_path_codex_saw() -> None:
    config = codex_trust.parse_config(codex_config(trusted_states(OUR_HOOKS_DOC)))
    verdict = codex_trust.judge(OUR_HOOKS_DOC, "/home/other/.codex/hooks.json", config)
    assert [hook.status for hook in verdict.hooks] == ["untrusted"] * 3


def test_a_missing_hook_of_ours_is_named() -> None:
    doc = json.loads(json.dumps(OUR_HOOKS_DOC))
    del doc["hooks"]["Stop"]
    verdict = codex_trust.judge(
        doc, HOOKS_PATH, codex_trust.parse_config(codex_config(trusted_states(OUR_HOOKS_DOC)))
    )
    assert verdict.state == "trusted" and verdict.missing == ("Stop",)
    assert "Stop not registered" in codex_trust.describe(verdict, "h", "c")


@pytest.mark.parametrize("flag", ["hooks", "codex_hooks"])
@pytest.mark.parametrize("use_tomllib", [True, False])
def test_hooks_turned_off_in_features_are_reported_off(flag: str, use_tomllib: bool) -> None:
    text = codex_config(trusted_states(OUR_HOOKS_DOC), f"\n[features]\n{flag} = false  # not now\n")
    verdict = codex_trust.judge(
        OUR_HOOKS_DOC, HOOKS_PATH, codex_trust.parse_config(text, use_tomllib=use_tomllib)
    )
    assert verdict.state == "off"


def test_other_toml_spellings_of_the_state_read_the_same() -> None:
    (key, digest) = key_and_hash(OUR_HOOKS_DOC, "UserPromptSubmit", 0)
    spellings = [
        f'[hooks.state]\n"{key}" = {{ trusted_hash = "{digest}", enabled = true }}\n',
        f"[hooks]\nstate.'{key}'.trusted_hash = '{digest}'\n",
    ]
    for text in spellings:
        for use_tomllib in (True, False):
            states = codex_trust.parse_config(text, use_tomllib=use_tomllib).states
            assert states[key]["trusted_hash"] == digest, (text, use_tomllib)


def test_codex_folder_resolves_codex_home_but_not_home(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / ".codex").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    assert codex_trust.codex_folder({"HOME": str(tmp_path / "link")}) == str(tmp_path / "link" / ".codex")
    assert codex_trust.codex_folder({"HOME": "/x", "CODEX_HOME": str(tmp_path / "link" / ".codex")}) == str(
        real / ".codex"
    )


# --------------------------------------------------------------------------- status, as a person runs it


def run_cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_in_home(home, *args, extra_env={"BLI_MEMORY_DAEMON": "0"})


def codex_status(home: Path) -> tuple[str, dict[str, Any]]:
    text = run_cli(home, "status")
    data = run_cli(home, "status", "--json")
    assert "Traceback" not in text.stderr + data.stderr
    (line,) = [line for line in text.stdout.splitlines() if line.startswith("codex:")]
    return line, json.loads(data.stdout)["codex"]


def write_trust(home: Path, hashes: dict[str, str]) -> None:
    """What Codex's trust write appends to config.toml (see the end-to-end test for the real one)."""
    config = home / ".codex" / "config.toml"
    text = config.read_text()
    for key, digest in hashes.items():
        text += f'\n[hooks.state."{key}"]\ntrusted_hash = "{digest}"\n'
    config.write_text(text)


def our_current_hashes(home: Path) -> dict[str, str]:
    doc = json.loads((home / ".codex" / "hooks.json").read_text())
    folder = str(home / ".codex" / "hooks.json")
    return {
        codex_trust.hook_key(folder, event, gi, hi): codex_trust.hook_hash(event, matcher, handler)
        for event, gi, hi, matcher, handler in codex_trust.our_handlers(doc)
    }


def test_status_says_not_installed_then_untrusted_then_trusted(tmp_path: Path) -> None:
    line, data = codex_status(tmp_path)
    assert line == "codex:   not installed (no bli-memory hooks in ~/.codex/hooks.json)"
    assert data["state"] == "not-installed"

    installed = run_cli(tmp_path, "install", "--host", "codex")
    assert installed.returncode == 0, installed.stderr
    assert "only once you trust them: run codex, open /hooks and trust them" in installed.stdout
    line, data = codex_status(tmp_path)
    assert (
        line
        == "codex:   hooks installed but not trusted (0 of 3 trusted) — run codex, open /hooks and trust them"
    )
    assert data["state"] == "untrusted" and [h["status"] for h in data["hooks"]] == ["untrusted"] * 3

    write_trust(tmp_path, our_current_hashes(tmp_path))
    line, data = codex_status(tmp_path)
    assert line == "codex:   hooks trusted (3 of 3)"
    assert data["state"] == "trusted" and data["trusted"] == 3
    again = run_cli(tmp_path, "install", "--host", "codex")
    assert again.returncode == 0 and "trust" not in again.stdout


def test_status_says_when_a_trusted_hook_changed(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "install", "--host", "codex").returncode == 0
    write_trust(tmp_path, our_current_hashes(tmp_path))
    hooks_file = tmp_path / ".codex" / "hooks.json"
    doc = json.loads(hooks_file.read_text())
    doc["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 31
    hooks_file.write_text(json.dumps(doc))
    line, _ = codex_status(tmp_path)
    assert "(2 of 3 trusted; 1 changed since trusted)" in line


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("config.toml", "[hooks.state\n", "config.toml is not valid TOML"),
        ("hooks.json", "{not json", "hooks.json is not valid JSON"),
    ],
)
def test_status_with_an_unreadable_codex_file_says_it_cannot_tell(
    tmp_path: Path, name: str, text: str, reason: str
) -> None:
    assert run_cli(tmp_path, "install", "--host", "codex").returncode == 0
    (tmp_path / ".codex" / name).write_text(text)
    line, data = codex_status(tmp_path)
    assert line.startswith("codex:   cannot tell (") and reason in line
    assert data["state"] == "unknown"


# --------------------------------------------------------------------------- the real Codex CLI


@pytest.fixture
def model_api() -> Iterator[RefusingModelApi]:
    api = RefusingModelApi()
    yield api
    api.close()


def test_codex_runs_our_hooks_only_once_trusted_and_status_agrees(
    tmp_path: Path, model_api: RefusingModelApi
) -> None:
    assert run_cli(tmp_path, "install", "--host", "codex").returncode == 0
    line, _ = codex_status(tmp_path)
    assert "hooks installed but not trusted (0 of 3 trusted)" in line

    untrusted = codex_exec(tmp_path, model_api)
    assert model_api.requests, untrusted.stderr  # Codex got past UserPromptSubmit to the model call
    assert hook_runs(tmp_path) == {}, untrusted.stderr

    bypass = codex_exec(tmp_path, model_api, "--dangerously-bypass-hook-trust")  # the hooks themselves work
    assert hook_runs(tmp_path) == {"session-start": 1, "prompt": 1}, bypass.stderr

    hooks = codex_hooks(tmp_path)
    assert [hook["trustStatus"] for hook in hooks] == ["untrusted"] * 3
    ours = our_current_hashes(tmp_path)
    assert {
        hook["key"]: hook["currentHash"] for hook in hooks
    } == ours  # status keys and hashes as Codex does
    trust_like_codex(tmp_path, hooks)
    assert [hook["trustStatus"] for hook in codex_hooks(tmp_path)] == ["trusted"] * 3
    line, data = codex_status(tmp_path)
    assert line == "codex:   hooks trusted (3 of 3)" and data["state"] == "trusted"

    trusted = codex_exec(tmp_path, model_api)
    assert hook_runs(tmp_path) == {"session-start": 2, "prompt": 2}, trusted.stderr


def test_codex_skips_a_trusted_hook_that_changed_and_status_says_so(
    tmp_path: Path, model_api: RefusingModelApi
) -> None:
    assert run_cli(tmp_path, "install", "--host", "codex").returncode == 0
    trust_like_codex(tmp_path, codex_hooks(tmp_path))
    hooks_file = tmp_path / ".codex" / "hooks.json"
    doc = json.loads(hooks_file.read_text())
    handler = doc["hooks"]["SessionStart"][0]["hooks"][0]
    handler["command"] = handler["command"].replace("hook session-start", "hook  session-start")
    hooks_file.write_text(json.dumps(doc, indent=2))

    assert [hook["trustStatus"] for hook in codex_hooks(tmp_path)] == ["modified", "trusted", "trusted"]
    line, data = codex_status(tmp_path)
    assert "(2 of 3 trusted; 1 changed since trusted)" in line
    assert [hook["status"] for hook in data["hooks"]] == ["modified", "trusted", "trusted"]

    ran = codex_exec(tmp_path, model_api)
    assert model_api.requests and hook_runs(tmp_path) == {"prompt": 1}, ran.stderr


def test_uninstall_removes_the_trust_codex_wrote_for_our_hooks_and_keeps_the_rest(tmp_path: Path) -> None:
    hooks_file = tmp_path / ".codex" / "hooks.json"
    hooks_file.parent.mkdir()
    theirs = {"type": "command", "command": "/usr/bin/their-stop-hook", "timeout": 10}
    hooks_file.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [theirs]}]}}, indent=2) + "\n")
    (tmp_path / ".codex" / "config.toml").write_text('model = "gpt-5"\n')
    assert run_cli(tmp_path, "install", "--host", "codex").returncode == 0
    hooks = codex_hooks(tmp_path)
    assert len(hooks) == 4
    trust_like_codex(tmp_path, hooks)  # Codex's own write: their hook and our three
    assert [hook["trustStatus"] for hook in codex_hooks(tmp_path)] == ["trusted"] * 4
    ours = set(our_current_hashes(tmp_path))
    their_key = next(hook["key"] for hook in hooks if hook["key"] not in ours)

    done = run_cli(tmp_path, "uninstall", "--host", "codex")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / ".codex" / "config.toml").read_text()
    states = codex_trust.parse_config(text).states
    assert set(states) == {their_key}  # Codex's record of ours is gone, theirs kept
    assert text.startswith('model = "gpt-5"\n') and "mcp_servers" not in text
    assert [(hook["key"], hook["trustStatus"]) for hook in codex_hooks(tmp_path)] == [(their_key, "trusted")]
    again = run_cli(tmp_path, "uninstall", "--host", "codex")
    assert again.returncode == 0 and "nothing of ours" in again.stdout
    assert (tmp_path / ".codex" / "config.toml").read_text() == text
