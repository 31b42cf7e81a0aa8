"""`bli-memory-mcp`, as the plugin's launcher (bin/bli-memory) runs it: `<python> <this file> ARGS`.

This file's folder is the first entry of `sys.path`, so the `bli_memory` beside it (the client the
plugin carries) is the one imported, whatever else the interpreter has installed. Exit status 97
before anything is read tells the launcher this interpreter is too old; the check is written so
that even a Python 2 parses it.
"""

import sys

if sys.version_info < (3, 10):
    sys.exit(97)

from bli_memory.cli import main  # noqa: E402

sys.exit(main())
