"""The devices role: teams, people, devices and their tokens, and who a job ran for."""

from __future__ import annotations

from typing import Any, Protocol

from bli_memory.door.model import Job, Principal


class DeviceStore(Protocol):
    """The store's devices: a token's principal, pairing, revoking, admin rights. A device belongs
    to a person of a team; a token is kept only as its hash."""

    def create_device(
        self, *, person: str, team: str = "local", admin: bool = False, label: str | None = None
    ) -> tuple[str, str]:
        """A new device (and its person and team, if new). Returns (device id, token), the token
        shown only here: the store keeps its hash."""
        ...

    def authenticate(self, token: str) -> Principal | None: ...

    def list_devices(self) -> list[dict[str, Any]]: ...

    def revoke_device(self, device_id: str) -> int | None:
        """Revoke an active device and cancel its queued and running extraction jobs (a running one
        then writes nothing: `job_may_write`). How many jobs were cancelled; None when there is no
        active device `device_id`."""
        ...

    def set_device_admin(self, device_id: str, admin: bool) -> bool:
        """Promote or demote one active device (admin is a device's, not its person's); False when
        there is no active device `device_id`."""
        ...

    def principal_for_job(self, job: Job) -> Principal: ...

    def team_named(self, team: str) -> int | None:
        """The id of the team named `team`, or None when there is none."""
        ...
