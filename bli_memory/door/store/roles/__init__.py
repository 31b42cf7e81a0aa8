"""The `Store` interface, one small protocol per role, composed: what the door needs from a database.

A store keeps devices, aliases, memory rows (every version and tombstone), vectors, extraction jobs,
experience rows and the devices' hourly hook figures, and nothing else: no search policy, no caches
of derived data, no HTTP. The memory service (`door/memories.py`) builds search, reconciliation and
indexes on top of it, so a new database plugs in by implementing these roles and passing the
contract suite (`tests/door/store/test_contract.py`). A part of the door that needs one role only
names that role (`DeviceStore`, `JobQueueStore`, …); each signature is written once, in its role.

Conventions every implementation follows:
- Every method is safe to call from several threads.
- Reads of memories are scoped by `team_id`; a row of another team is never returned.
- Methods return `None` or `False` for "not there"; deciding what that means for a caller (404,
  409) is the service's job.
- `transaction()` nests: an inner block joins the outer one, and an exception leaving any block
  rolls back that block's writes (a savepoint when nested).
- A failure of the database leaves the store as one of the door's errors (`door/errors.py`), never
  as its driver's.
"""

from __future__ import annotations

from typing import Protocol

from bli_memory.door.store.roles.changes import ChangeLogStore, OutsideChangeStore
from bli_memory.door.store.roles.copy import CopyStore
from bli_memory.door.store.roles.core import StoreCore
from bli_memory.door.store.roles.devices import DeviceStore
from bli_memory.door.store.roles.jobs import JobQueueStore
from bli_memory.door.store.roles.memories import MemoryRowStore
from bli_memory.door.store.roles.ops import OpsRowStore
from bli_memory.door.store.roles.vectors import VectorStore


class Store(
    StoreCore,
    OutsideChangeStore,
    ChangeLogStore,
    DeviceStore,
    MemoryRowStore,
    VectorStore,
    JobQueueStore,
    OpsRowStore,
    CopyStore,
    Protocol,
):
    """Rows in, rows out: every role at once. See the module docstring for the conventions."""
