"""`bli-memory-mcp install | uninstall | --print-config`: flags, output, and the order of the steps.

`--print-config[=claude|codex]` prints the install contract or the Codex `config.toml` block with the
bare bin name. `install` resolves the absolute command of the program that is running, plans every
file's change (`edits.plan`), then writes them one by one; `uninstall` plans and writes the removal.

Bad arguments raise UsageError (exit 2) and a file that cannot be changed safely raises CliError
(exit 1) before anything is written; `bli_memory.cli` prints either as one line. A file that fails
while being written is reported on its own line and the others are still written (exit 1).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bli_memory.errors import EXIT_FAILED, EXIT_OK, CliError, UsageError
from bli_memory.install.contract import CONTRACT_SCHEMA, PERMISSION, install_contract
from bli_memory.install.edits import plan
from bli_memory.install.files import (
    BACKUP_SUFFIX,
    FileChange,
    InstallError,
    Paths,
    apply_change,
    show_path,
)
from bli_memory.install.probe import can_run_server, resolve_command, server_interpreter
from bli_memory.install.tomledit import codex_toml_block

PRINT_CONFIG_HELP = """\
usage: bli-memory-mcp --print-config[=claude|codex]

Print what each host needs, with the bare bin name `bli-memory-mcp` (install substitutes the
absolute path it resolves on this machine):
  --print-config          both blocks, with headings
  --print-config=claude   the install contract (bli-memory-install-config.v1, JSON)
  --print-config=codex    the block for ~/.codex/config.toml
"""

INSTALL_HELP = """\
usage: bli-memory-mcp {verb} [--dry-run] [--host claude|codex]{force_usage}

{what}
  Claude Code: ~/.claude.json (mcpServers.bli-memory) and ~/.claude/settings.json
               (hooks SessionStart / UserPromptSubmit / Stop, permission {permission})
  Codex:       ~/.codex/config.toml ([mcp_servers.bli-memory]) and ~/.codex/hooks.json
               (uninstall also removes the trust Codex recorded for our hooks: [hooks.state."…"])
  the skill:   ~/.claude/skills/bli-memory/SKILL.md and ~/.agents/skills/bli-memory/SKILL.md
               (what `bli-memory-mcp --print-skill` prints; no other skill is touched)
$CLAUDE_CONFIG_DIR and $CODEX_HOME are honoured. Other keys are kept as they are; each file is
backed up once to <file>{backup} before its first change; running it twice changes nothing.

{plugin_note}
options:
  --dry-run            show what would change and write nothing
  --host claude|codex  only this host (default: both)
{force_option}  --help               show this help
"""

INSTALL_PLUGIN_NOTE = """\
Where the bli-memory plugin is installed and enabled (claude plugin install / codex plugin add),
install leaves that host to the plugin and says so: registering the hooks as well would run each
of them twice. --force registers them anyway.
"""
FORCE_OPTION = "  --force              register even beside an enabled bli-memory plugin\n"
UNINSTALL_PLUGIN_NOTE = """\
The bli-memory plugin is not touched: remove it with `claude plugin uninstall bli-memory@<marketplace>`
or `codex plugin remove bli-memory@<marketplace>`.
"""

PLUGIN_SKIPPED_NOTE = (
    "{host}: the bli-memory plugin ({key}) is installed and enabled, so its hooks, MCP server and skill "
    "come from the plugin and install writes nothing for {host} (`--force` registers them as well: "
    "every hook would then run twice)"
)
PLUGIN_KEPT_NOTE = (
    "{host}: the bli-memory plugin ({key}) stays installed; uninstall removes only what install wrote"
)

SERVER_SKIPPED_NOTE = (
    "MCP server not registered: {python} cannot import the `mcp` package, so the server could not "
    "start (the hooks are registered and work without it). For the server, install bli-memory into a "
    "venv (python3 -m venv V && V/bin/pip install bli-memory, or pipx) and run V/bin/bli-memory-mcp install."
)


def print_config_main(args: list[str]) -> int:
    """`--print-config[=claude|codex]`, also `--print-config --claude|--codex`."""
    host = "both"
    for arg in args:
        if arg in ("--help", "-h"):
            sys.stdout.write(PRINT_CONFIG_HELP)
            return EXIT_OK
        if arg == "--print-config":
            continue
        value = arg.split("=", 1)[1] if arg.startswith("--print-config=") else arg.lstrip("-")
        if value not in ("claude", "codex") or host != "both":
            raise UsageError(f"bli-memory-mcp: --print-config takes claude or codex, not {arg!r}")
        host = value
    contract = json.dumps(install_contract(), indent=2)
    if host == "claude":
        sys.stdout.write(contract + "\n")
    elif host == "codex":
        sys.stdout.write(codex_toml_block())
    else:
        sys.stdout.write(f"# Claude Code: {CONTRACT_SCHEMA} (install writes it into ~/.claude.json and\n")
        sys.stdout.write("# ~/.claude/settings.json with the absolute path of the bin)\n")
        sys.stdout.write(contract + "\n\n")
        sys.stdout.write("# Codex: ~/.codex/config.toml\n")
        sys.stdout.write(codex_toml_block())
        sys.stdout.write(
            "\n# The bli-memory skill: install writes `bli-memory-mcp --print-skill` to\n"
            "# ~/.claude/skills/bli-memory/SKILL.md and ~/.agents/skills/bli-memory/SKILL.md\n"
        )
    return EXIT_OK


@dataclass(frozen=True)
class Options:
    dry_run: bool
    hosts: tuple[str, ...]
    force: bool = False


def parse_options(verb: str, argv: Sequence[str]) -> Options | None:
    """The flags, or None after --help (printed); UsageError for anything else."""
    dry_run = False
    force = False
    hosts: tuple[str, ...] = ("claude", "codex")
    words = list(argv)
    while words:
        word = words.pop(0)
        if word in ("--help", "-h"):
            what = (
                "Register the MCP server, the three hooks and the permission with Claude Code and Codex."
                if verb == "install"
                else "Remove what install registered, and nothing else."
            )
            install = verb == "install"
            sys.stdout.write(
                INSTALL_HELP.format(
                    verb=verb,
                    what=what,
                    permission=PERMISSION,
                    backup=BACKUP_SUFFIX,
                    force_usage=" [--force]" if install else "",
                    plugin_note=INSTALL_PLUGIN_NOTE if install else UNINSTALL_PLUGIN_NOTE,
                    force_option=FORCE_OPTION if install else "",
                )
            )
            return None
        if word == "--dry-run":
            dry_run = True
            continue
        if word == "--force" and verb == "install":
            force = True
            continue
        if word == "--host" or word.startswith("--host="):
            value = word.split("=", 1)[1] if "=" in word else (words.pop(0) if words else "")
            if value not in ("claude", "codex"):
                raise UsageError(f"bli-memory-mcp {verb}: --host takes claude or codex")
            hosts = (value,)
            continue
        raise UsageError(
            f"bli-memory-mcp {verb}: unknown argument {word!r}; see `bli-memory-mcp {verb} --help`"
        )
    return Options(dry_run=dry_run, hosts=hosts, force=force)


def run(verb: str, argv: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    """Plan every file, then write (or, with --dry-run, describe) each change; the exit status."""
    options = parse_options(verb, argv)
    if options is None:
        return EXIT_OK
    env = os.environ if env is None else env
    hosts = beside_plugins(verb, options, env)
    if not hosts:
        return EXIT_OK
    paths = Paths.from_env(env)
    own = resolve_command()
    prefix = own if verb == "install" else None
    with_server = prefix is None or can_run_server(prefix)
    try:
        changes = plan(paths, prefix, hosts, own, with_server=with_server)
    except InstallError as exc:
        raise CliError(f"bli-memory-mcp {verb}: {exc}", EXIT_FAILED) from None
    server_files = (paths.claude_json, paths.codex_config)
    status = EXIT_OK
    for change in changes:
        if not change.changed:
            if not with_server and change.path in server_files:
                state = "MCP server not registered (see below)"
            else:
                state = "already registered" if verb == "install" else "nothing of ours"
            sys.stdout.write(f"{show_path(change.path)}: {state}\n")
        elif not write_one(verb, change, dry_run=options.dry_run):
            status = EXIT_FAILED
    if not with_server and prefix is not None:
        sys.stderr.write(SERVER_SKIPPED_NOTE.format(python=server_interpreter(prefix)) + "\n")
    if options.dry_run:
        sys.stdout.write("dry run: nothing written\n")
    elif verb == "install" and status == EXIT_OK and "codex" in hosts:
        trust_note = codex_trust_note(env)
        if trust_note:
            sys.stdout.write(trust_note + "\n")
    return status


def beside_plugins(verb: str, options: Options, env: Mapping[str, str]) -> tuple[str, ...]:
    """The hosts to plan: install leaves out a host whose bli-memory plugin is enabled (unless
    --force), saying so in one line; uninstall plans every host and says the plugin stays."""
    from bli_memory.install.plugin_state import HOST_NAMES, plugin_state

    hosts: list[str] = []
    for host in options.hosts:
        state = plugin_state(host, env)
        name = HOST_NAMES[host]
        if state.active and verb == "install" and not options.force:
            sys.stdout.write(PLUGIN_SKIPPED_NOTE.format(host=name, key=state.key) + "\n")
            continue
        if state.key is not None and verb == "uninstall":
            sys.stdout.write(PLUGIN_KEPT_NOTE.format(host=name, key=state.key) + "\n")
        hosts.append(host)
    return tuple(hosts)


def write_one(verb: str, change: FileChange, *, dry_run: bool) -> bool:
    """Write (or describe) one planned change and say so in one line; False when it failed.

    A failure is reported here and the caller goes on with the other files: each is written on its
    own, so one that cannot be written leaves the others as planned.
    """
    shown = show_path(change.path)
    summary = "; ".join(change.actions)
    if change.new_text is None:
        summary += "; delete the file (install created it)"
    if dry_run:
        sys.stdout.write(f"{shown}: would {summary}\n")
        return True
    try:
        backup = apply_change(change)
    except InstallError as exc:
        sys.stderr.write(f"bli-memory-mcp {verb}: {exc}\n")
        return False
    except OSError as exc:
        sys.stderr.write(f"bli-memory-mcp {verb}: cannot write {shown}: {exc.strerror}\n")
        return False
    note = f" (backup {show_path(backup)})" if backup else ""
    sys.stdout.write(f"{shown}: {summary}{note}\n")
    return True


def codex_trust_note(env: Mapping[str, str]) -> str | None:
    """One line after install while Codex would not run our hooks yet: they wait for the person's trust."""
    from bli_memory.install.codex_trust import TRUST_HINT, check

    if check(env).state != "untrusted":
        return None
    return (
        f"Codex runs these hooks only once you trust them: {TRUST_HINT}; "
        "`bli-memory-mcp status` shows whether it does."
    )


def install_main(argv: list[str]) -> int:
    # `install --print-config` reads as naturally as `--print-config`: the contract, nothing written
    if any(arg == "--print-config" or arg.startswith("--print-config=") for arg in argv):
        return print_config_main(argv)
    return run("install", argv)


def uninstall_main(argv: list[str]) -> int:
    return run("uninstall", argv)
