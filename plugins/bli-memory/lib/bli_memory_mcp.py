"""`bli-memory-mcp`, as the plugin's launcher (bin/bli-memory) runs it: `<python> <this file> ARGS`.

This file's folder is the first entry of `sys.path`, so the `bli_memory` beside it (the client the
plugin carries) is the one imported, whatever else the interpreter has installed. On an interpreter
older than 3.10 it runs the launcher again, before anything is read from stdin, with this
interpreter's name added to BLI_MEMORY_PYTHON_SKIP, so the launcher tries the next one; that part is
written so that even a Python 2 runs it.
"""

import sys

if sys.version_info < (3, 10):
    import os

    tried = os.environ.get("BLI_MEMORY_PYTHON_TRYING", "python3")
    os.environ["BLI_MEMORY_PYTHON_SKIP"] = (os.environ.get("BLI_MEMORY_PYTHON_SKIP", "") + " " + tried).strip()
    launcher = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "..", "bin", "bli-memory")
    os.execv("/bin/sh", ["/bin/sh", launcher] + sys.argv[1:])

from bli_memory.cli import main  # noqa: E402

sys.exit(main())
