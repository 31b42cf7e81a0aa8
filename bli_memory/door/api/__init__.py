"""The door's HTTP API, one module per job:

- `app` — `create_app`: assembles the FastAPI app from the parts below;
- `bodies` — the request bodies and their checks;
- `caller` — who is calling: a device token, or the memory page's session cookie;
- `error_answers` — every failure answered as `{error, message}`, and how `/openapi.json` documents it;
- `gate` — the ASGI gate before the API (Host, Origin, JSON bodies, size, deadline) and the request log;
- `headers` — the security headers on every answer;
- `signin` — the memory page's one-time sign-in codes and cookie sessions;
- `routes_memories`, `routes_spaces`, `routes_copy`, `routes_jobs`, `routes_ops`, `routes_page` — the
  routes of one area each (memories, pins and aliases, export and import, jobs and experience, health
  and operations, the memory page), added to the app by `create_app`.

This package's `__init__` imports nothing: `door.server` reads `headers` without building the app.
"""
