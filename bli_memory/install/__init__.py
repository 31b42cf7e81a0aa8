"""Registration with Claude Code and Codex: `install`, `uninstall` and `--print-config`.

`--print-config[=claude|codex]` prints the `bli-memory-install-config.v1` contract or the Codex
`config.toml` block, with the bare bin name. `install` resolves the absolute command of the program
that is running (so it registers itself, not whatever else is on PATH) and writes:

- Claude Code: `mcpServers.bli-memory` in `~/.claude.json`; one matcher group per hook under
  `hooks.<Event>` plus `permissions.allow: mcp__bli-memory__search_memory` in `~/.claude/settings.json`
  (both under `$CLAUDE_CONFIG_DIR` when that is set).
- Codex: `[mcp_servers.bli-memory]` (`command`, `args`) in `~/.codex/config.toml`, and the three
  hooks in `~/.codex/hooks.json` (same shape as Claude's; `$CODEX_HOME` honoured).
- both: the `bli-memory` skill, `~/.claude/skills/bli-memory/SKILL.md` and
  `~/.agents/skills/bli-memory/SKILL.md` (`skill`; uninstall removes only that copy). A Codex without
  hook support never reads hooks.json, so writing it is harmless there; builds that gate hooks
  behind `[features] codex_hooks = true` are left to the person (we never flip feature flags), and
  Codex runs a new or changed hook only once the person trusts it (`/hooks`): install says so while
  that is pending, and `status` reads whether it is done (`bli_memory.install.codex_trust`). Install never
  writes that trust itself: it is the person's review. Uninstall removes the trust Codex recorded for
  our hooks (`[hooks.state."…"]` tables keyed by their places in hooks.json), no other hook's.

Beside the plugin: where the bli-memory plugin is installed and enabled for a host (`claude plugin
install`, `codex plugin add`), install writes nothing for that host and says so, since its hooks
would run twice; `--force` registers them anyway. Uninstall never touches a plugin, and removing the
plugin leaves install's entries alone (the hosts keep plugins in their own files and folders).

Every edit is idempotent (a second run writes nothing), atomic (temp file + rename in the same
folder, the file's mode kept, symlinks followed), keeps every other byte (JSON: only the changed
members and elements are rewritten, in the file's own style; TOML: only our table), and backs the
file up once (`<file>.bli-memory.bak`) before the first change. All files are planned before any is
written: a malformed file is reported in one line and nothing is written anywhere (exit 1).

One job per module, each depending only on those above it:

- `contract`: the names, the three hooks and their commands, the v1 contract, recognising our hooks;
- `probe`: which program is running, which python runs it, whether that python can run the server;
- `files`: the four paths (and the skill's two), a planned change, the atomic write and the backup;
- `skill`: the bli-memory SKILL.md (package data, `--print-skill`) and its install/uninstall plan;
- `jsonsplice`: a JSON file's new text, changing only what differs;
- `tomledit`: Codex's config.toml, our table rendered and edited in place;
- `edits`: each host's files as they should become (the plan);
- `codex_trust`: whether Codex trusts the hooks install registered (read by `status` and `install`),
  and which of Codex's trust entries are ours (for `uninstall`);
- `plugin_state`: whether the bli-memory plugin is installed and enabled in Claude Code or Codex,
  and so which route each host's hooks come from (read by `status` and `install`);
- `cli`: the commands' flags and output (`bli_memory.cli` dispatches `install` and `uninstall` there).

This package's own module imports nothing, so `status`, which reads Codex's trust through
`codex_trust`, loads only the few modules that needs.
"""
