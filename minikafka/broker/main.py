"""Entry point of ``minikafka broker``: run one broker until SIGTERM or SIGINT."""
from __future__ import annotations

import asyncio
import logging
import signal
import sys

from ..config import BrokerConfig
from ..errors import ClientError, InvalidConfigError, KafkaError
from . import gc_pauses, log_limit
from .server import Broker


def run_broker(config: BrokerConfig) -> int:
    """Run a broker in the foreground; returns the process exit code."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s broker-{config.broker_id} %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    log_limit.install()  # a flood of bad clients must not flood the log
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        return runner.run(_main(config))


def _loop_factory():
    """uvloop's event loop when MINIKAFKA_EVENT_LOOP=uvloop and uvloop is installed
    (``pip install 'minikafka[uvloop]'``), else asyncio's own."""
    import os

    choice = os.environ.get("MINIKAFKA_EVENT_LOOP", "asyncio")
    if choice not in ("asyncio", "uvloop"):
        raise SystemExit(f"minikafka: error: MINIKAFKA_EVENT_LOOP must be asyncio or uvloop, got {choice!r}")
    if choice == "uvloop":
        try:
            import uvloop
        except ImportError:
            raise SystemExit("minikafka: error: MINIKAFKA_EVENT_LOOP=uvloop but uvloop is not installed "
                             "(pip install 'minikafka[uvloop]')") from None
        return uvloop.new_event_loop
    return None


async def _main(config: BrokerConfig) -> int:
    try:
        broker = Broker(config)  # checks the security settings (users file, TLS files)
    except KafkaError as exc:
        print(f"minikafka: error: {exc.message}", file=sys.stderr)
        return 2
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await broker.start()
    except (ClientError, InvalidConfigError) as exc:
        print(f"minikafka: error: {exc.message if isinstance(exc, KafkaError) else exc}", file=sys.stderr)
        await broker.stop()
        return 2
    except OSError as exc:
        print(f"minikafka: error: broker {config.broker_id} cannot start: {_os_error(exc)}", file=sys.stderr)
        await broker.stop()
        return 2
    pauses = gc_pauses.GcPauses(broker.metrics)
    pauses.install()
    gc_pauses.settle()
    try:
        await stop.wait()
    finally:
        pauses.uninstall()
    logging.getLogger(__name__).info("broker %d shutting down", config.broker_id)
    await broker.shutdown()
    return 0


def _os_error(exc: OSError) -> str:
    """An OSError in words: asyncio's "[Errno 98] error while attempting to bind on address
    ('127.0.0.1', 9092): address already in use" becomes "cannot listen on 127.0.0.1:9092:
    address already in use"."""
    import re

    text = str(exc)
    m = re.search(r"bind on address \('?([^',]*)'?, (\d+)[^)]*\): (.*)", text)
    if m:
        return f"cannot listen on {m.group(1)}:{m.group(2)}: {m.group(3)}"
    return re.sub(r"^\[Errno \d+\] ", "", text) or exc.__class__.__name__
