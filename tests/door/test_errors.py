"""One error tree: every error the door tells a caller is a `DoorError` with its status, code and
message, the stores' among them, and the door's own failures carry the line it says on stderr."""

from __future__ import annotations

from bli_memory.door.errors import (
    DeviceRevoked,
    DoorError,
    QueueFull,
    StoreDamaged,
    StoreError,
    StoreFull,
    StoreUnavailable,
    Unauthorized,
)


def test_the_store_errors_answer_as_the_door_always_has_and_keep_their_detail_in_str() -> None:
    full = StoreFull("/tmp/m.db: database or disk is full", store="sqlite /tmp/m.db")
    assert isinstance(full, StoreError) and isinstance(full, DoorError)
    assert (full.status, full.code) == (503, "storage_full")
    assert full.message == "the store is full (no space left for the database); nothing was written"
    assert str(full) == "/tmp/m.db: database or disk is full"
    assert full.log_line == (
        "bli-memory-door storage full: could not write to sqlite /tmp/m.db (/tmp/m.db: database or disk "
        "is full); free space on its disk — writes answer 503 storage_full until then"
    )
    away = StoreUnavailable("lost the connection to PostgreSQL (gone)", store="postgresql 16.2 pg://x")
    assert (away.status, away.code) == (503, "store_unavailable")
    assert away.message == (
        "the door cannot reach its database right now; nothing was written by this request. Try again shortly"
    )
    assert (
        away.log_line
        == "bli-memory-door store unavailable: postgresql 16.2 pg://x (lost the connection to PostgreSQL (gone))"
    )
    damaged = StoreDamaged("/tmp/m.db is damaged (malformed); nothing was written")
    assert (damaged.status, damaged.code, damaged.log_line) == (503, "store_damaged", None)
    assert damaged.message.startswith("the door's database is damaged; it takes no more writes")
    assert StoreFull("no room").log_line is None and str(StoreFull("no room")) == "no room"


def test_a_full_queue_and_a_revoked_device_answer_as_the_service_did() -> None:
    queue = QueueFull(200)
    assert (queue.status, queue.code, queue.pending, str(queue)) == (
        429,
        "queue_full",
        200,
        "200 extraction jobs waiting",
    )
    assert queue.message == (
        "this device has 200 extract jobs waiting, the most it may have; save again when some are done"
    )
    revoked = DeviceRevoked("dev_1")
    assert isinstance(revoked, Unauthorized) and (revoked.status, revoked.code) == (401, "unauthorized")
    assert revoked.message == "the token is unknown or revoked" and str(revoked) == "dev_1"
    assert revoked.log_line is None and DoorError("x").log_line is None
