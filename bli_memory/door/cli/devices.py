"""`bli-memory-door pair` and `tokens list|revoke|promote|demote`: the devices of a store, on the
door's machine. A token is printed once, at pairing; listing shows devices, never their tokens."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping

from bli_memory.door.cli.stores import open_store
from bli_memory.door.config import DbLocation, StoreConfig
from bli_memory.errors import EXIT_USAGE, CliError


def pair(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """A new device for a person in a team; its token on stdout, the only time it is shown."""
    person = args.person.strip()
    team = args.team.strip()
    if not person or not team:
        raise CliError("--person and --team must not be empty", EXIT_USAGE)
    store = open_store(StoreConfig.from_env(DbLocation.from_env(args.db, env), env))
    try:
        device_id, token = store.create_device(person=person, team=team, admin=args.admin, label=args.label)
    finally:
        store.close()
    sys.stderr.write(
        f"bli-memory-door: device {device_id} for {person!r} in team {team!r}"
        f"{' (admin)' if args.admin else ''}; the token below is shown once\n"
    )
    sys.stdout.write(token + "\n")
    return 0


def tokens(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """`tokens list` (table or `--json`), `revoke`, `promote`, `demote`: one device at a time."""
    from bli_memory.door.model import iso

    location = DbLocation.from_env(args.db, env)
    if not location.is_postgres and not (path := location.sqlite_file()).exists():
        raise CliError(f"no memory database at {path}")
    store = open_store(StoreConfig.from_env(location, env))
    try:
        if args.tokens_command == "revoke":
            cancelled = store.revoke_device(args.device_id)
            if cancelled is None:
                raise CliError(f"no active device {args.device_id!r}", 1)
            jobs = f"; cancelled its {cancelled} waiting extract job(s)" if cancelled else ""
            sys.stdout.write(f"revoked {args.device_id}{jobs}\n")
            return 0
        if args.tokens_command in ("promote", "demote"):
            admin = args.tokens_command == "promote"
            if not store.set_device_admin(args.device_id, admin):
                raise CliError(f"no active device {args.device_id!r}", 1)
            sys.stdout.write(f"{args.device_id} is {'now' if admin else 'no longer'} an admin device\n")
            return 0
        devices = store.list_devices()
    finally:
        store.close()
    rows = [
        {
            "id": device["id"],
            "person": device["person"],
            "team": device["team"],
            "admin": bool(device["admin"]),
            "label": device["label"],
            "createdAt": iso(device["created_at"]),
            "revokedAt": None if device["revoked_at"] is None else iso(device["revoked_at"]),
        }
        for device in devices
    ]
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    if not rows:
        sys.stdout.write("no devices; create one with `bli-memory-door pair --person NAME`\n")
        return 0
    for row in rows:
        state = "revoked " + row["revokedAt"] if row["revokedAt"] else "active"
        admin = " admin" if row["admin"] else ""
        sys.stdout.write(f"{row['id']}  {row['team']}/{row['person']}{admin}  {row['createdAt']}  {state}\n")
    return 0
