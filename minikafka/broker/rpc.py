"""Broker-to-broker calls (fetchers, controller channels): msgpack over HTTP."""
from __future__ import annotations

import asyncio

import aiohttp

from ..errors import NetworkExceptionError, RequestTimedOutError, error_for
from ..protocol.codec import pack, unpack

CONTENT_TYPE = "application/x-msgpack"


async def call(session: aiohttp.ClientSession, host: str, port: int, api: str, body: dict, timeout_s: float) -> dict:
    """POST ``body`` to ``http://host:port/v1/<api>``; raise the response's top-level error."""
    url = f"http://{host}:{port}/v1/{api}"
    try:
        async with session.post(url, data=pack(body), headers={"Content-Type": CONTENT_TYPE},
                                timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
            raw = await resp.read()
    except asyncio.TimeoutError:
        raise RequestTimedOutError(f"{api} to {host}:{port} timed out after {timeout_s:.1f} s") from None
    except aiohttp.ClientError as exc:
        raise NetworkExceptionError(f"{api} to {host}:{port} failed: {exc.__class__.__name__}: {exc}") from None
    msg = unpack(raw)
    if not isinstance(msg, dict):
        raise NetworkExceptionError(f"{api} to {host}:{port}: response is not a map")
    if msg.get("error_code", 0):
        raise error_for(msg["error_code"], msg.get("message", ""))
    return msg
