"""The three hooks: session-start (context), prompt (recall), stop (save the turn).

Entry point: `bli_memory.hooks.run` (`main` for the `hook` subcommand, `answer` for the daemon).
Everything under this package runs on every turn of every session, so it imports the standard
library only, and lazily: no mcp, asyncio, argparse, urllib.request, http.client, email,
subprocess, logging or uuid (tests/hooks/test_imports.py holds that line).
"""
