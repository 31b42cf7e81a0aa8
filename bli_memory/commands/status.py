"""`bli-memory-mcp status`: is this machine paired, does the door answer, is the daemon alive, which space?

Each check says what it saw, never guesses: the door's version and embedder come from its
`/healthz`; the token is proven by an authenticated request (a job lookup that cannot match, so it
costs the door nothing); the daemon is alive only if its socket answers a ping. A missing daemon is
normal (the prompt hook starts it on demand) and never makes the status fail.
Where each host's hooks come from is read from the hosts' own files (`install.plugin_state`): the
bli-memory plugin, `install`, or both, which it warns about since every hook would run twice.

Exit status: 0 paired, door reachable and token accepted; 1 otherwise; 2 bad input.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from bli_memory import daemon_wire
from bli_memory.commands.base import EXIT_FAILED, EXIT_OK, new_parser, parse, print_json
from bli_memory.settings import ENV_TOKEN, ENV_URL, Settings, load_settings, session_file

#: what an unpaired machine runs for a door: one on this machine (`serve` pairs the local user
#: itself), or a team's. `client` is how this program is reached (a plugin's launcher when
#: `bli-memory-mcp` is not on PATH).
UNPAIRED_HINT = (
    "for a door on this machine run `scripts/quickstart` in a clone of bli-memory "
    "(it pairs you), or log in to your team's: `{client} login --url URL --token-stdin`"
)
#: the door is on the same machine or the LAN; a status that hangs is worse than one that says "timeout".
DOOR_CHECK_DEADLINE_S = 5.0
DAEMON_PING_TIMEOUT_S = 0.5
#: what `status` says for each way the ping exchange can fail after connecting
DAEMON_MISS_TEXT = {
    daemon_wire.TIMEOUT: "no answer within timeout",
    daemon_wire.UNAVAILABLE: "it hung up before reading",
    daemon_wire.BAD_RESPONSE: "answer is not JSON",
}


def check_daemon(path: str) -> dict[str, Any]:
    """Ping the daemon's socket (`daemon_wire`): `{alive, socket, answer|reason}`. Any JSON object
    it answers proves it alive; the answer is shown as it came."""
    if not os.path.exists(path):
        return {"alive": False, "socket": path, "reason": "no socket"}
    deadline = time.monotonic() + DAEMON_PING_TIMEOUT_S
    try:
        sock = daemon_wire.connect(path, DAEMON_PING_TIMEOUT_S)
    except TimeoutError:
        return {"alive": False, "socket": path, "reason": "no answer within timeout"}
    except OSError as exc:
        return {"alive": False, "socket": path, "reason": exc.strerror or type(exc).__name__}
    got = daemon_wire.converse(sock, daemon_wire.PING_LINE, deadline)
    answer = got if isinstance(got, str) else daemon_wire.decode_reply(got)
    if isinstance(answer, str):
        return {"alive": False, "socket": path, "reason": DAEMON_MISS_TEXT.get(answer, answer)}
    return {"alive": True, "socket": path, "answer": answer}


def check_door(settings: Settings) -> dict[str, Any]:
    """`/healthz` plus a token probe: `{reachable, version, store, embedder, token}` or a reason."""
    from bli_memory.render import display_url
    from bli_memory.tools import DoorUrlError, door_client_for
    from bli_memory.wire.reasons import to_log_reason

    shown_url = display_url(settings.door_url)
    try:
        client = door_client_for(settings)
    except DoorUrlError as exc:
        return {"url": shown_url, "reachable": False, "reason": str(exc).removeprefix("bli-memory: ")}
    deadline = time.monotonic() + DOOR_CHECK_DEADLINE_S
    try:
        try:
            health = client.healthz(deadline=deadline)
        except Exception as exc:
            return {"url": shown_url, "reachable": False, "reason": to_log_reason(exc)}
        door: dict[str, Any] = {
            "url": shown_url,
            "reachable": True,
            "ok": health.get("ok"),
            "version": health.get("version"),
            "store": health.get("store"),
            "embedder": health.get("embedder"),
        }
        if health.get("ok") is False:  # it answers, but cannot write: say why
            door["problem"] = {"reason": health.get("reason"), "message": health.get("message")}
        if health.get("integrityCheck") is not None:
            door["integrityCheck"] = health.get("integrityCheck")
        verdict = client.check_token(deadline=deadline)
        door["token"] = verdict if verdict in ("accepted", "refused") else f"unknown ({verdict})"
        return door
    finally:
        client.close()


def _space(settings: Settings, cwd: str) -> dict[str, Any]:
    from bli_memory.space import resolve_space
    from bli_memory.wire.reasons import to_log_reason

    try:
        return {"folder": cwd, "containerTag": resolve_space(settings, cwd)}
    except Exception as exc:
        return {"folder": cwd, "containerTag": None, "reason": to_log_reason(exc)}


def check_codex(env: Mapping[str, str]) -> dict[str, Any]:
    """Whether Codex trusts the hooks install registered, from Codex's own files (see codex_trust)."""
    from bli_memory.install.codex_trust import check, describe

    trust = check(env)
    codex = trust.as_json()
    shown = {name: _tilde(path, env) for name, path in trust.files.items()}
    codex["summary"] = describe(trust, shown.get("hooksFile", ""), shown.get("configFile", ""))
    return codex


def check_routes(env: Mapping[str, str]) -> dict[str, Any]:
    """Where each host's hooks come from: the bli-memory plugin, `install`, both, or neither
    (`install.plugin_state`), with the install files as the person sees them."""
    from bli_memory.install.files import Paths
    from bli_memory.install.plugin_state import hook_routes

    routes = hook_routes(env)
    paths = Paths.from_env(env)
    routes["claude"]["installFile"] = _tilde(paths.claude_settings, env)
    routes["codex"]["installFile"] = _tilde(paths.codex_hooks, env)
    return routes


TRUST_HINT_TEXT = "run codex, open /hooks and trust them"
#: Codex also fingerprints the plugin's folder and asks for the trust again after an upgrade, which
#: status cannot recompute (`install.plugin_state`): it says so rather than promise more.
UPGRADE_NOTE = "Codex asks again after each plugin upgrade"


def client_command(routes: Mapping[str, Any]) -> str:
    """How the person runs this client: `bli-memory-mcp` when it is on PATH, else an enabled
    plugin's launcher (a plugin user has no `bli-memory-mcp` on PATH)."""
    import shlex
    import shutil

    if shutil.which("bli-memory-mcp"):
        return "bli-memory-mcp"
    for host in ("claude", "codex"):
        plugin = routes.get(host, {}).get("plugin", {})
        if plugin.get("enabled") and plugin.get("root"):
            return shlex.quote(os.path.join(plugin["root"], "bin", "bli-memory"))
    return "bli-memory-mcp"


def route_line(host: str, route: Mapping[str, Any]) -> str | None:
    """The text after `claude:` / `codex:`; None for a Codex without the plugin (the trust line says it)."""
    plugin = route["plugin"]
    where = route["installFile"]
    if route["route"] == "both":
        return (
            f"hooks from the plugin {plugin['key']} and from install ({where}): every hook runs twice — "
            f"keep one: `bli-memory-mcp uninstall --host {host}` (the plugin stays)"
        )
    if route["route"] == "plugin":
        text = f"hooks from the plugin {plugin['key']} {plugin.get('version') or ''}".rstrip()
        trust = plugin.get("hooks")
        if host == "codex" and trust:
            if trust["trusted"] == trust["total"]:
                text += f", trusted ({trust['trusted']} of {trust['total']}; {UPGRADE_NOTE})"
            else:
                text += f", not trusted ({trust['trusted']} of {trust['total']} trusted) — {TRUST_HINT_TEXT}"
        return text
    if host == "codex":
        return None
    disabled = f"; the plugin {plugin['key']} is installed but disabled" if plugin.get("key") else ""
    if route["route"] == "install":
        return f"hooks from install ({where}){disabled}"
    return f"not set up (add the bli-memory plugin, or run `bli-memory-mcp install`){disabled}"


def _tilde(path: str, env: Mapping[str, str]) -> str:
    from bli_memory.paths import home_dir

    home = home_dir(env).rstrip("/")
    return "~" + path[len(home) :] if home and path.startswith(home + "/") else path


def _describe(value: object) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{key} {val}" for key, val in value.items() if val not in (None, ""))
    return str(value)


def render_text(status: Mapping[str, Any]) -> str:
    pairing = status["pairing"]
    lines = []
    if pairing["paired"]:
        lines.append(f"paired:  yes (door {pairing['doorUrl']}, token from {pairing['tokenFrom']})")
    else:
        lines.append(f"paired:  no — {UNPAIRED_HINT.format(client=status.get('client', 'bli-memory-mcp'))}")
    door = status.get("door")
    if door is None:
        lines.append("door:    not checked (not paired)")
    elif door["reachable"]:
        facts = [f"version {door.get('version')}", f"store {_describe(door.get('store'))}"]
        facts.append(f"embedder {_describe(door.get('embedder'))}")
        lines.append("door:    reachable, " + ", ".join(facts))
        problem = door.get("problem")
        if problem:
            lines.append(f"store:   cannot write ({problem.get('reason')}): {problem.get('message')}")
        lines.append(f"token:   {door['token']}")
    else:
        lines.append(f"door:    unreachable ({door['reason']}) at {door['url']}")
    daemon = status["daemon"]
    if daemon["alive"]:
        lines.append(f"daemon:  alive ({daemon['socket']})")
    else:
        lines.append(f"daemon:  not running ({daemon['reason']}; the prompt hook starts it when needed)")
    space = status["space"]
    if space["containerTag"]:
        lines.append(f"space:   {space['containerTag']} (of {space['folder']})")
    else:
        lines.append(f"space:   unknown ({space.get('reason')}) for {space['folder']}")
    routes = status.get("hooks", {})
    if "claude" in routes:
        lines.append(f"claude:  {route_line('claude', routes['claude'])}")
    codex_route = route_line("codex", routes["codex"]) if "codex" in routes else None
    if codex_route is not None:
        lines.append(f"codex:   {codex_route}")
    elif "codex" in status:
        lines.append(f"codex:   {status['codex']['summary']}")
    lines += _experience_lines(status)
    return "\n".join(lines)


# -- the experience log and the skill (what `ops` and `install` also show) ---------------------------


def check_experience(env: Mapping[str, str]) -> dict[str, Any]:
    """How many experience entries wait to be shipped, and what the last `sync` did."""
    from bli_memory.commands.ops import experience_queue

    return experience_queue(env)


def check_skill(env: Mapping[str, str]) -> dict[str, Any]:
    """Which hosts have the bli-memory skill install writes (`install.skill`)."""
    from bli_memory.install.skill import is_ours, skill_paths

    found: dict[str, Any] = {}
    for host, path in skill_paths(env).items():
        try:
            with open(path, encoding="utf-8") as handle:
                found[host] = {"path": path, "installed": is_ours(handle.read())}
        except (OSError, UnicodeDecodeError):
            found[host] = {"path": path, "installed": False}
    return found


def _experience_lines(status: Mapping[str, Any]) -> list[str]:
    lines = []
    if "experience" in status:
        from bli_memory.commands.ops import queue_line

        queue = status["experience"]
        detail = queue_line(queue).split("; ", 1)[1]
        lines.append(f"sync:    {queue['queued']} experience entries queued; {detail}")
    if "skill" in status:
        from bli_memory.install.plugin_state import HOST_NAMES

        skill = status["skill"]
        routes = status.get("hooks", {})
        plugged = [
            host for host in ("claude", "codex") if routes.get(host, {}).get("plugin", {}).get("enabled")
        ]
        hosts = [
            host
            for host in ("claude", "codex")
            if skill.get(host, {}).get("installed") and host not in plugged
        ]
        parts = [f"installed for {', '.join(HOST_NAMES[host] for host in hosts)}"] if hosts else []
        if plugged:  # the plugin carries the skill
            parts.append(f"from the plugin for {', '.join(HOST_NAMES[host] for host in plugged)}")
        text = "; ".join(parts) or "not installed"
        lines.append(
            "skill:   "
            + text
            + ("" if len(hosts) + len(plugged) == 2 else " (`bli-memory-mcp install` writes it)")
        )
    return lines


def main(argv: list[str]) -> int:
    parser = new_parser(
        "status",
        "Show whether this machine is paired, whether the door answers (its version and\n"
        "embedder) and accepts the token, whether the resident daemon is alive, the\n"
        "space (container tag) of the current folder, where each host's hooks come from (the\n"
        "bli-memory plugin, install, or both) and whether Codex trusts them.",
        "exit status: 0 healthy (the daemon is optional), 1 unpaired / door down / token refused,\n"
        "2 bad input",
    )
    parser.add_argument("--json", action="store_true", help="print the checks as JSON on stdout")
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    from bli_memory import __version__
    from bli_memory.render import display_url
    from bli_memory.settings import unpaired_message
    from bli_memory.tools import project_dir

    env = os.environ
    settings = load_settings(env)
    pairing: dict[str, Any] = {
        "paired": settings.paired,
        "doorUrl": display_url(settings.door_url),
        "tokenFrom": ENV_TOKEN if env.get(ENV_TOKEN) else session_file(env),
        "urlFrom": ENV_URL if env.get(ENV_URL) else session_file(env),
    }
    status: dict[str, Any] = {
        "version": __version__,
        "pairing": pairing,
        "door": check_door(settings) if settings.paired else None,
        "daemon": check_daemon(daemon_wire.socket_path(env)),
        "space": _space(settings, project_dir(env)),
        "codex": check_codex(env),
        "hooks": check_routes(env),
        "experience": check_experience(env),
        "skill": check_skill(env),
    }
    door = status["door"]
    healthy = bool(door and door["reachable"] and door.get("token") == "accepted" and not door.get("problem"))
    status["healthy"] = healthy
    if not settings.paired:
        status["client"] = client_command(status["hooks"])
    if args.json:
        print_json(status)
    else:
        sys.stdout.write(render_text(status) + "\n")
    if not settings.paired:
        sys.stderr.write(unpaired_message(env) + "\n")
    return EXIT_OK if healthy else EXIT_FAILED
