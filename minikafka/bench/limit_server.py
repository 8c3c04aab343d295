"""A bare aiohttp server for the ``limit`` yardstick: what the transport alone allows.

``python -m minikafka.bench.limit_server`` listens on a free 127.0.0.1 port, prints it,
and serves until stdin closes:

* ``POST /produce`` reads the body and answers 2 bytes (a produce without a log);
* ``GET /fetch?bytes=N`` answers N bytes (a fetch without a log).
"""
from __future__ import annotations

import asyncio
import sys

from aiohttp import web


async def _produce(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(body=b"ok")


async def _fetch(request: web.Request) -> web.Response:
    size = int(request.query.get("bytes", "65536"))
    return web.Response(body=bytes(size))


async def _serve() -> None:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/produce", _produce)
    app.router.add_get("/fetch", _fetch)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(port, flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(_serve())
