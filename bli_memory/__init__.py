"""bli-memory: persistent memory for coding agents.

This module deliberately imports nothing: every hook run starts here, and
interpreter cold start is the product (see docs/architecture.md).
"""

__version__ = "0.1.0"
