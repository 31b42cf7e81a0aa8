"""The experience sync's background tick: the session-start hook ships queued experience entries at
most once an hour, after its own answer is printed, in a detached `bli-memory-mcp sync`.

`maybe_start` runs last in the session-start hook (`hooks.run.main`), after stdout, the receipt and
the stats are written, and never raises. It costs one `stat` when the last tick is recent, and starts
nothing unless all of these hold:

- the stamp file (`~/.local/state/bli-cockpit/experience-sync.stamp`) is older than
  `SYNC_INTERVAL_S` or absent;
- the machine is paired (a session file, or the token in the environment);
- there is something to ship: the outbox (`~/.codex/agent-experience-outbox/`) holds an entry that
  is neither shipped nor rejected (sidecars are read as bytes: no JSON parser on the hook path), or
  an hourly hook-stats file changed since the last tick (`sync` sends the hook figures too).

Two sessions starting at once sync once: the stamp is checked again and rewritten under a claim file
created with `O_EXCL`, so only the holder of the claim can find the stamp stale and start the sync; a
claim older than `CLAIM_STALE_S` (its holder died between two system calls) is removed. The sync is
spawned like the daemon (`via_daemon.spawn_detached`: `os.posix_spawn`, a new session, stdio on
/dev/null), so the host's pipes close when the hook exits and the prompt never waits for it.
`BLI_MEMORY_SYNC_TICK=0` turns the tick off. What the sync did is written by `sync` itself
(`experience_log.write_last_sync`), which `status` and `ops` show.
"""

from __future__ import annotations

import os
import time

from bli_memory import paths

TYPE_CHECKING = False  # `typing` costs milliseconds on every hook; mypy reads this constant as True
if TYPE_CHECKING:
    from collections.abc import Mapping

#: the tick starts a sync at most this often per machine
SYNC_INTERVAL_S = 3600.0
STAMP_NAME = "experience-sync.stamp"
CLAIM_NAME = "experience-sync.claim"
#: a claim is held for a few system calls; one older than this was left by a hook that died
CLAIM_STALE_S = 60.0
#: the outbox sidecars read per tick, at most (the newest are not needed to know the queue is non-empty)
SCAN_MAX_FILES = 2000
ENV_SWITCH = "BLI_MEMORY_SYNC_TICK"
#: mirrors settings.ENV_TOKEN without importing settings (and its `json`)
ENV_TOKEN = "BLI_MEMORY_DEVICE_TOKEN"
STATE_DIR_MODE = 0o700


def _age_s(path: str, now_s: float) -> float | None:
    try:
        return now_s - os.stat(path).st_mtime
    except OSError:
        return None


def _is_recent(stamp: str, now_s: float) -> bool:
    age = _age_s(stamp, now_s)
    return age is not None and 0 <= age < SYNC_INTERVAL_S


def has_queued(outbox: str) -> bool:
    """True when a sidecar in `outbox` is neither shipped nor rejected (read as bytes, not parsed)."""
    try:
        names = sorted(name for name in os.listdir(outbox) if name.endswith(".json"))
    except OSError:
        return False
    for name in names[:SCAN_MAX_FILES]:
        try:
            with open(os.path.join(outbox, name), "rb") as handle:
                data = handle.read(65536)
        except OSError:
            continue
        if b'"shipped": false' in data and b'"rejected": true' not in data:
            return True
    return False


def has_new_hook_figures(stats_folder: str, since_s: float | None) -> bool:
    """True when an hourly hook-stats file in `stats_folder` changed after `since_s` (any file when
    None: no sync ever ran)."""
    try:
        names = os.listdir(stats_folder)
    except OSError:
        return False
    for name in names[:SCAN_MAX_FILES]:
        if not name.endswith(".json"):
            continue
        try:
            changed = os.stat(os.path.join(stats_folder, name)).st_mtime
        except OSError:
            continue
        if since_s is None or changed > since_s:
            return True
    return False


def _last_tick_s(stamp: str) -> float | None:
    try:
        return os.stat(stamp).st_mtime
    except OSError:
        return None


def _is_paired(env: Mapping[str, str]) -> bool:
    from bli_memory.hooks.via_daemon import has_session

    return bool(env.get(ENV_TOKEN)) or has_session(env)


def _unlink_quietly(path: str) -> bool:
    """Remove a file; False when it could not be (no contextlib here: ~1.4 ms of imports per hook)."""
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def _claim(path: str, now_s: float) -> bool:
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        return True
    except FileExistsError:
        age = _age_s(path, now_s)
        if age is not None and age > CLAIM_STALE_S:
            _unlink_quietly(path)  # the next session claims it
        return False
    except OSError:
        return False


def _take_turn(folder: str, now_s: float) -> bool:
    """True when this run is the one to sync: the stamp is stale and this run rewrote it."""
    stamp = os.path.join(folder, STAMP_NAME)
    claim = os.path.join(folder, CLAIM_NAME)
    try:
        os.makedirs(folder, mode=STATE_DIR_MODE, exist_ok=True)
    except OSError:
        return False
    if not _claim(claim, now_s):
        return False
    try:
        if _is_recent(stamp, now_s):
            return False  # another session took this hour's turn while we looked
        fd = os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, b"%d\n" % int(now_s))
        finally:
            os.close(fd)
        os.utime(stamp, (now_s, now_s))
        return True
    except OSError:
        return False
    finally:
        _unlink_quietly(claim)


def maybe_start(env: Mapping[str, str] | None = None, now_s: float | None = None) -> int | None:
    """Start the detached sync when its hour has come and there is something to ship; its pid, or
    None when nothing was started. Never raises."""
    try:
        env = os.environ if env is None else env
        now_s = time.time() if now_s is None else now_s
        if env.get(ENV_SWITCH, "1") == "0":
            return None
        folder = paths.state_dir(env)
        if _is_recent(os.path.join(folder, STAMP_NAME), now_s):
            return None
        outbox = os.path.join(paths.home_dir(env), ".codex", "agent-experience-outbox")
        if not _is_paired(env):
            return None
        from bli_memory.hooks.stats import stats_dir  # already loaded: the hook has just recorded its run

        stats_folder = stats_dir(env)
        last = _last_tick_s(os.path.join(folder, STAMP_NAME))
        if not (has_queued(outbox) or has_new_hook_figures(stats_folder, last)):
            return None
        if not _take_turn(folder, now_s):
            return None
        from bli_memory.hooks.via_daemon import spawn_detached, with_package_path

        return spawn_detached(["sync"], with_package_path(env))
    except Exception:
        return None  # a background chore: the hook's run is already answered
