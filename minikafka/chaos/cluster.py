"""Starting and reading the cluster a fault-injection run works on.

A run starts its own cluster with :func:`start_cluster` (free ports chosen at run
time by :mod:`minikafka.cluster.free_ports`, outside the ephemeral range; the broker
settings of :data:`FAST_SETTINGS` so failures show quickly) or uses a running one,
and reads ZooKeeper through :class:`ZkReader` and each broker through :func:`post`
(the blocking protocol client used for introspection).
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from ..cluster import free_ports, launcher
from ..cluster.launcher import _ZkReader
from ..cluster.state import exists, load
from ..polling import poll
from ..rpc import call_sync
from ..zk import layout
from ..zk.launcher import is_no_node

# Broker settings that make failures visible quickly.
FAST_SETTINGS = {
    "replica.lag.time.max.ms": "3000",
    "zookeeper.session.timeout.ms": "4000",
    "replica.high.watermark.checkpoint.interval.ms": "1000",
    "replica.fetch.backoff.ms": "200",
    "unclean.leader.election.enable": "false",
}


def post(host: str, port: int, api: str, body: dict, timeout_s: float = 3.0) -> dict:
    """One protocol request with a blocking HTTP client (for introspection)."""
    return call_sync(host, port, api, body, timeout_s, raise_error=False)


class ZkReader(_ZkReader):
    """The launcher's ZooKeeper reader, but connecting lazily, reconnecting after a
    failure and raising it (the harness retries), for the harness's own reads."""

    def __init__(self, connect: str) -> None:
        self.connect = connect
        self.client = None
        self.lock = threading.Lock()

    def _client(self):
        if self.client is None or not self.client.connected:
            self.close()
            from ..zk.probe import probe_client
            self.client = probe_client(self.connect, timeout_s=5.0)
        return self.client

    def get(self, path: str) -> tuple[bytes, Any] | None:
        """The data and stat of ``path``, or None when it does not exist."""
        with self.lock:
            try:
                return self._client().get(path)
            except Exception as exc:
                if is_no_node(exc):
                    return None
                self.close()
                raise

    def children(self, path: str) -> list[str]:
        """The children of ``path`` ([] when it does not exist)."""
        with self.lock:
            try:
                return self._client().get_children(path)
            except Exception as exc:
                if is_no_node(exc):
                    return []
                self.close()
                raise

    def partition_state(self, topic: str, partition: int) -> layout.LeaderIsr | None:
        """The partition state znode (leader, leader epoch, ISR), or None."""
        got = self.get(layout.partition_state_path(topic, partition))
        return layout.LeaderIsr.decode(got[0]) if got else None


def start_cluster(dir: str, storage: str, configs: dict[str, str], brokers: int = 3,
                  wrap: Callable[[int], list[str]] | None = None, zookeeper_nodes: int = 1) -> None:
    """``launcher.up`` on free ports (retried when a port was taken meanwhile).
    ``wrap``: a command prefix per broker id (see ``launcher.up``); ``zookeeper_nodes``:
    ZooKeeper servers (3: an ensemble)."""
    last: Exception | None = None
    for _ in range(3):
        zk_port = free_ports.free_port()
        base = free_ports.free_port_block(brokers)
        kafka_base = free_ports.free_port_block(brokers)
        try:
            launcher.up(dir, brokers=brokers, zookeeper_port=zk_port, base_port=base, storage=storage,
                        broker_configs=configs, timeout_s=90, wrap=wrap, kafka_base_port=kafka_base,
                        zookeeper_nodes=zookeeper_nodes)
            return
        except Exception as exc:
            last = exc
            try:
                launcher.down(dir)
            except Exception:
                pass
            if "in use" not in str(exc):
                raise
    raise RuntimeError(f"could not start a cluster: {last}")


def cluster_running(dir: str) -> bool:
    """True when ``dir`` records a cluster whose brokers all run."""
    if not exists(dir):
        return False
    state = load(dir)
    return all(launcher.proc_state(b.pid) == "running" for b in state.brokers.values())


def broker_setting(state: Any, name: str, default: Any) -> Any:
    """A broker setting from the first broker's recorded command line."""
    for b in state.brokers.values():
        argv = b.argv or []
        for i, arg in enumerate(argv):
            if arg == "--config" and i + 1 < len(argv) and argv[i + 1].startswith(name + "="):
                return argv[i + 1].split("=", 1)[1]
    return default


def wait(cond: Callable[[], bool], timeout_s: float, interval_s: float = 0.25) -> bool:
    """Poll ``cond`` until it is true (True) or ``timeout_s`` passed (False); an
    exception in ``cond`` counts as false."""
    return bool(poll(cond, timeout_s, interval_s, not_yet=(Exception,)))
