"""A PostgreSQL password never in an error line, and a way to keep it out of the command line.

A URL that does not parse is quoted, in part or whole, by libpq's own message (a bad percent escape
quotes the password, a broken IPv6 host the whole URL): every command that takes a URL prints one
line with the password masked. And the door runs on a real server whose login needs a password,
given by `~/.pgpass`, `PGPASSWORD` or a libpq service file, with a `--db` URL that holds none: the
process list never shows it. A `--db` that does hold one works and says once, without it, where the
password belongs.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import BIN, DoorProcess, PostgresServer

SECRET = "hunter2-Secret"
#: URLs libpq cannot read, each with the password where the message may quote it.
MALFORMED = {
    "a bad percent escape in the password": f"postgresql://ada:{SECRET}%zz@db.internal/memory",
    "a space in the password": f"postgresql://ada:{SECRET} x@db.internal/memory",
    "an unclosed IPv6 host": f"postgresql://ada:{SECRET}@[::1/memory",
    "a parameter without a value": f"postgresql://ada@db.internal/memory?password={SECRET}&sslmode",
    "an unknown parameter": f"postgresql://ada:{SECRET}@db.internal/memory?bogus=1",
}


def _door(*args: str, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "bli-memory-door"), *args],
        capture_output=True,
        text=True,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin", **(env or {})},
        timeout=60,
    )


@pytest.mark.parametrize("url", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_url_with_a_password_is_one_masked_line_for_every_command(
    url: str, tmp_path: Path
) -> None:
    commands = {
        "serve": ["serve", "--port", "0", "--no-autopair", "--db", url],
        "pair": ["pair", "--person", "ada", "--db", url],
        "tokens": ["tokens", "list", "--db", url],
        "migrate": ["migrate", "--from", url, "--to", str(tmp_path / "copy.db")],
    }
    for name, args in commands.items():
        done = _door(*args, home=tmp_path)
        said = done.stderr + done.stdout
        assert done.returncode == 2, (name, said)
        assert done.stderr.count("\n") == 1 and "Traceback" not in said, (name, said)
        assert "hunter2" not in said and "Secret" not in said, (name, said)
        assert "***" in said or "not a valid PostgreSQL URL" in said, (name, said)


@dataclass(frozen=True)
class Login:
    """A role whose login needs its password, owning a database of its own."""

    role: str
    password: str
    database: str
    socket_folder: str

    def url(self, password: str | None = None) -> str:
        secret = f":{password}" if password is not None else ""
        return f"postgresql://{self.role}{secret}@/{self.database}?host={self.socket_folder}"


@pytest.fixture
def login(postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Login]:
    """A role that must give its password: on the tests' own server (which trusts local logins) a
    first `pg_hba.conf` line asks this role, and only it, for one; a server named by the environment
    asks for passwords already. libpq's own variables are cleared from the doors' environment, so
    each test gives the password only the way it means to."""
    for name in ("PGPASSWORD", "PGPASSFILE", "PGSERVICE", "PGSERVICEFILE"):
        monkeypatch.delenv(name, raising=False)
    role = f"pw_{uuid.uuid4().hex[:10]}"
    password = f"pw-{uuid.uuid4().hex}"
    postgres.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    postgres.execute(f"CREATE DATABASE {role} OWNER {role}")
    postgres.execute(f"ALTER DATABASE {role} SET search_path = public")
    # the door creates the vector extension: a database owner may not, so it is made here first
    admin_of_it = postgres.url.replace("/postgres?", f"/{role}?", 1)
    import psycopg

    with psycopg.connect(admin_of_it, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    hba = Path(postgres.execute("SHOW hba_file")[0][0])
    original = hba.read_text()
    if postgres.folder is not None:
        hba.write_text(f"local all {role} scram-sha-256\n{original}")
        postgres.execute("SELECT pg_reload_conf()")
    socket_folder = postgres.url.rpartition("host=")[2].split("&")[0]
    try:
        yield Login(role, password, role, socket_folder)
    finally:
        if postgres.folder is not None:
            hba.write_text(original)
            postgres.execute("SELECT pg_reload_conf()")


def _command_line(door: DoorProcess) -> str:
    assert door.process is not None
    return Path(f"/proc/{door.process.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _serves(door: DoorProcess) -> None:
    status, health = door.get("/healthz", token="")
    assert status == 200 and health["store"] == "postgresql", health
    status, body = door.post("/api/memory/save", {"content": "kept out of argv", "containerTag": "t"})
    assert status == 201, body


def test_the_password_comes_from_pgpassword_pgpass_or_a_service_file_never_from_argv(
    login: Login, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    refused = _door("tokens", "list", "--db", login.url(), home=home)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr  # it needs one
    assert "password" in refused.stderr

    ways: dict[str, dict[str, str]] = {"PGPASSWORD": {"PGPASSWORD": login.password}}
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"*:*:{login.database}:{login.role}:{login.password}\n")
    pgpass.chmod(0o600)
    ways["~/.pgpass (PGPASSFILE)"] = {"PGPASSFILE": str(pgpass)}
    for way, env in ways.items():
        door = DoorProcess(login.url(), home, ["--embedder", "none"], env=env)
        try:
            _serves(door)
            assert login.password not in _command_line(door), way
        finally:
            door.stop()
        assert not any(login.password in line for line in door.lines), way

    services = tmp_path / "pg_service.conf"
    services.write_text(
        f"[memory]\nhost={login.socket_folder}\ndbname={login.database}\nuser={login.role}\n"
        f"password={login.password}\n"
    )
    services.chmod(0o600)
    door = DoorProcess(
        "postgresql://?service=memory", home, ["--embedder", "none"], env={"PGSERVICEFILE": str(services)}
    )
    try:
        _serves(door)
        assert login.password not in _command_line(door)
    finally:
        door.stop()
    assert not any(login.password in line for line in door.lines)


def test_a_password_in_the_db_url_works_and_is_told_where_it_belongs(login: Login, tmp_path: Path) -> None:
    door = DoorProcess(login.url(login.password), tmp_path, ["--embedder", "none"])
    try:
        _serves(door)
        warning = door.wait_for_log("--db holds a password")
        assert "~/.pgpass" in warning and "PGPASSWORD" in warning
    finally:
        door.stop()
    assert not any(login.password in line for line in door.lines)
    wrong = _door("tokens", "list", "--db", login.url("not-" + login.password), home=tmp_path)
    assert wrong.returncode == 1 and wrong.stderr.count("\n") == 1
    assert login.password not in wrong.stderr and "***" in wrong.stderr
