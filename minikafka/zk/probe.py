"""A blocking ZooKeeper client for a few short reads, for the launcher, the fault harness
and the test helpers: kazoo behind it, the adapter's errors (:mod:`.errors`) in front, so
that nothing above ``zk/`` meets kazoo's exception types (as with the brokers' own
session, :mod:`.session`).

:func:`probe_client` connects (``ZooKeeperUnavailableError`` when ZooKeeper does not
answer within the timeout); a missing znode is ``NoNodeError``, a lost connection
``ZooKeeperUnavailableError``.  Call :meth:`ProbeClient.close` when done.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, TypeVar

T = TypeVar("T")


def translate(exc: BaseException) -> BaseException:
    """The adapter's error for a kazoo exception (:func:`.session.translate`; imported
    when first needed, so that importing this module loads no kazoo)."""
    from .session import translate as kazoo_to_ours

    return kazoo_to_ours(exc)


def _quiet_logger() -> logging.Logger:
    log = logging.getLogger("minikafka.zk.probe.kazoo")
    log.setLevel(logging.CRITICAL)
    log.propagate = False
    return log


class ProbeClient:
    """A started ZooKeeper session for short reads (see the module doc)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    @property
    def connected(self) -> bool:
        return bool(self._client.connected)

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            return fn(*args)
        except Exception as exc:
            raise translate(exc) from None

    def get(self, path: str) -> tuple[bytes, Any]:
        """The data and stat (``version``, ``czxid``, ``mzxid``, ...) of ``path``."""
        return self._call(self._client.get, path)

    def get_children(self, path: str) -> list[str]:
        return self._call(self._client.get_children, path)

    def exists(self, path: str) -> Any | None:
        """The stat of ``path``, or None when it does not exist."""
        return self._call(self._client.exists, path)

    def ensure_path(self, path: str) -> None:
        self._call(self._client.ensure_path, path)

    def stop(self) -> None:
        """End the session (kept for the callers that stop, then close)."""
        try:
            self._client.stop()
        except Exception:
            pass

    def close(self) -> None:
        """End the session and free the client."""
        self.stop()
        try:
            self._client.close()
        except Exception:
            pass


def probe_client(connect: str, timeout_s: float = 3.0) -> ProbeClient:
    """A started session on the ZooKeeper at ``connect`` (the caller closes it);
    ``ZooKeeperUnavailableError`` when it does not answer within ``timeout_s``."""
    from kazoo.client import KazooClient

    client = KazooClient(
        hosts=connect,
        timeout=max(timeout_s, 1.0),
        connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 1.5, "max_delay": 0.5},
        logger=_quiet_logger(),
    )
    try:
        client.start(timeout=timeout_s)
    except Exception as exc:
        try:
            client.stop()
            client.close()
        except Exception:
            pass
        raise translate(exc) from None
    return ProbeClient(client)
