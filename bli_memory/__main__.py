from bli_memory.cli import main

raise SystemExit(main())
