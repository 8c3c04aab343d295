"""Entry point of ``minikafka broker``: run one broker until SIGTERM or SIGINT."""
from __future__ import annotations

import asyncio
import logging
import signal
import sys

from ..config import BrokerConfig
from ..errors import ClientError
from .server import Broker


def run_broker(config: BrokerConfig) -> int:
    """Run a broker in the foreground; returns the process exit code."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s broker-{config.broker_id} %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    return asyncio.run(_main(config))


async def _main(config: BrokerConfig) -> int:
    broker = Broker(config)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await broker.start()
    except ClientError as exc:
        print(f"minikafka: error: {exc}", file=sys.stderr)
        await broker.stop()
        return 2
    except OSError as exc:
        print(f"minikafka: error: broker {config.broker_id} cannot start: {exc}", file=sys.stderr)
        await broker.stop()
        return 2
    await stop.wait()
    logging.getLogger(__name__).info("broker %d shutting down", config.broker_id)
    await broker.shutdown()
    return 0
