"""At most `n` requests inside Django at once in one ASGI web process; the others wait their turn
as coroutines, costing no thread.

Django runs a sync view (all of this site's) on a thread of the request's own: without a bound,
a hundred requests at once make a hundred threads and ask a hundred database connections. The
bound is settings.WEB_THREADS, also the size of the process's connection pool, so no request
inside waits for a connection. A client waiting on ?wait= holds no slot while it waits
(leaderboard/asgi_wait.py asks Django through this layer, one short request at a time).
"""
from __future__ import annotations

import asyncio


class Slots:
    def __init__(self, app, n: int):
        self.app, self.n = app, n
        self._free: asyncio.Semaphore | None = None  # made on the server's own loop

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if self._free is None:
            self._free = asyncio.Semaphore(self.n)
        async with self._free:
            await self.app(scope, receive, send)
