"""The file the registered hooks run (`bli_memory_mcp.py`), in a folder of its own: a script's folder
becomes the first entry of `sys.path`, and this one holds nothing that could stand in for a module."""
