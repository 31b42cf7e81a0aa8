"""`bli-memory-mcp`, as the hooks `install` registers run it: `<python> <this file> hook prompt`.

pip's console script imports `re` before anything else, ~13 ms that every hook would pay; this file
runs the same `main` without it, and a person reviewing the hook (Codex's /hooks) reads what it runs.
"""

import sys

from bli_memory.cli import main

sys.exit(main())
