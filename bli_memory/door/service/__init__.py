"""The memory service's parts, each with one job, under the one facade the door holds
(`door/memories.py`: `MemoryService`).

Every part that writes takes the same `writer.IndexedWriter`: the store, the embedder, the in-memory
indexes and the lock that keeps the three consistent. Parts depend on the writer and on the parts
they read through (spaces, candidates, search), never on the facade or on each other in a cycle.
"""
