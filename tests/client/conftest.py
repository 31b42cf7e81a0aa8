"""Fixtures of the client tests: `stand_in`, loopback stand-ins for a door that misbehaves on demand."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.client.helpers import Handler, StandIn


@pytest.fixture
def stand_in() -> Iterator[Callable[..., StandIn]]:
    servers: list[StandIn] = []

    def start(handler: Handler, **options: object) -> StandIn:
        server = StandIn(handler, **options)  # type: ignore[arg-type]
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
