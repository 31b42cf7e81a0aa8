"""The hooks' one way to the door: settings, the space of the folder, a client, one call.

Prompt, session-start and Stop each need the same steps around their one door call; they live here
so the three cannot drift apart (which client is closed, when the space is resolved). Imports the
door client and `space` only when a hook actually calls the door.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs milliseconds on every hook; mypy reads this constant as True
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    from bli_memory.door_client import DoorClient
    from bli_memory.settings import Settings
    from bli_memory.wire.http import Connection

    T = TypeVar("T")


def paired_settings(settings: Settings | None) -> Settings | None:
    """`settings` (loaded from the session file and environment when None), or None when unpaired."""
    if settings is None:
        from bli_memory.settings import load_settings

        settings = load_settings()
    return settings if settings.paired else None


def call(
    settings: Settings, cwd: str, connection: Connection | None, request: Callable[[DoorClient, str], T]
) -> tuple[str, T]:
    """(the folder's space tag, what `request(client, tag)` answered).

    A `connection` given by the caller (the daemon's warm one) stays open; a client made here is
    closed. `DoorCallError` passes through for the caller to turn into its receipt.
    """
    from bli_memory.door_client import DoorClient
    from bli_memory.space import resolve_space

    container_tag = resolve_space(settings, cwd)
    client = DoorClient(str(settings.door_url), str(settings.token), connection=connection)
    try:
        return container_tag, request(client, container_tag)
    finally:
        if connection is None:
            client.close()
