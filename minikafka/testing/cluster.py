"""A local cluster for a test suite: ZooKeeper and N broker processes on free loopback
ports, with both listeners, faults by role, waits and healing.

:func:`start_cluster` starts one through the launcher (``minikafka cluster up``): ports
from :mod:`minikafka.cluster.free_ports` (outside the ephemeral range, retried when
another process took one meanwhile), memory storage, and, when this process may add
iptables rules (root, iptables, cgroup v2), every broker in a cgroup of its own so that
:meth:`Faults.cut <minikafka.testing.faults.Faults.cut>` can cut its links.  The
:class:`LocalCluster` it returns gives:

* ``bootstrap`` (msgpack/HTTP, for minikafka's own clients and the CLI) and
  ``kafka_bootstrap`` (Kafka's binary protocol, for confluent-kafka, kafka-python,
  aiokafka, Java, Spark), ``zk_connect``, ``brokers`` (id -> port), ``kafka_ports``;
* ``faults`` (:class:`~minikafka.testing.faults.Faults`) and ``wait``
  (:class:`~minikafka.testing.waits.Waits`);
* :meth:`LocalCluster.create_topic`, :meth:`LocalCluster.admin`;
* :meth:`LocalCluster.broken` (what a test left behind) and :meth:`LocalCluster.heal`
  (undo it and wait until every partition has a leader and a full ISR).
"""
from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import time
from typing import Any

from ..chaos.cluster import ZkReader
from ..cluster import free_ports, launcher
from ..cluster.state import ClusterState, load
from ..errors import ClientError
from ..zk import layout
from .faults import Faults
from .security import Security
from .waits import Waits, wait_until

_names = itertools.count(1)


def default_broker_configs(brokers: int) -> dict[str, str]:
    """Broker settings for test clusters: a new group's first rebalance after 200 ms (not
    3 s), internal topics of 10 partitions (not 50) with at most as many replicas as
    there are brokers.  Settings given to :func:`start_cluster` win."""
    rf = str(min(3, brokers))
    return {
        "group.initial.rebalance.delay.ms": "200",
        "offsets.topic.num.partitions": "10",
        "offsets.topic.replication.factor": rf,
        "transaction.state.log.num.partitions": "10",
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": str(min(2, brokers)),
    }


class LocalCluster:
    """A running local cluster (see the module doc).  A context manager: leaving the
    block stops every process it started and removes its link rules."""

    def __init__(self, dir: str, state: ClusterState, links: Any = None, cluster_links: Any = None,
                 configs: dict[str, str] | None = None, owned_dir: str | None = None, owns_processes: bool = True,
                 security: Security | None = None) -> None:
        self.dir = dir
        self.security = security or Security()
        self.owns_processes = owns_processes
        self.configs = dict(configs or {})
        self.brokers = {bid: b.port for bid, b in sorted(state.brokers.items())}
        self.kafka_ports = {bid: b.kafka_port for bid, b in sorted(state.brokers.items()) if b.kafka_port}
        self.bootstrap = ",".join(b.endpoint for _, b in sorted(state.brokers.items()))
        self.kafka_bootstrap = ",".join(f"127.0.0.1:{p}" for _, p in sorted(self.kafka_ports.items()))
        self.zk_connect = state.zookeeper.connect
        self.zk = ZkReader(self.zk_connect)
        self._links = links
        self.links = cluster_links
        session_s = int(self.configs.get("zookeeper.session.timeout.ms", "6000")) / 1000
        self.faults = Faults(dir, self.zk, cluster_links, session_timeout_s=session_s)
        self.wait = Waits(self.zk, self.bootstrap)
        self._owned_dir = owned_dir
        self.stopped = False

    @classmethod
    def attach(cls, dir: str) -> "LocalCluster":
        """The cluster a ``minikafka cluster up`` recorded in ``dir``, without link faults
        (its brokers do not run in cgroups of their own); :meth:`stop` leaves its
        processes running."""
        from ..chaos.cluster import broker_setting

        state = load(dir)
        session = broker_setting(state, "zookeeper.session.timeout.ms", "6000")
        return cls(dir, state, configs={"zookeeper.session.timeout.ms": str(session)}, owns_processes=False)

    def __repr__(self) -> str:
        return f"LocalCluster(dir={self.dir!r}, bootstrap={self.bootstrap!r}, kafka_bootstrap={self.kafka_bootstrap!r})"

    # -- clients ----------------------------------------------------------------------------
    def admin(self, **options: Any) -> Any:
        """A new :class:`minikafka.Admin` on this cluster (close it, or use ``with``)."""
        from ..client.sync import Admin

        return Admin(self.bootstrap, **options)

    def create_topic(self, name: str | None = None, partitions: int = 1, replication_factor: int | None = None,
                     config: dict[str, Any] | None = None) -> str:
        """Create a topic (a new unique name when ``name`` is None; replication factor:
        every broker, at most 3) and return its name once every partition has a leader."""
        name = name or f"topic-{os.getpid()}-{next(_names)}"
        rf = replication_factor if replication_factor is not None else min(3, len(self.brokers))
        with self.admin() as admin:
            admin.create_topic(name, partitions, rf, config=config)
        return name

    def delete_topic(self, name: str) -> None:
        """Delete a topic (waits until it left the metadata)."""
        with self.admin() as admin:
            admin.delete_topic(name)

    def kafka_client_config(self, user: str | None = None) -> dict[str, str]:
        """confluent-kafka's (librdkafka's) settings for the Kafka listener: ``bootstrap.servers``
        and, on a secured cluster, ``security.protocol``, the SASL user (default: the first)
        and ``ssl.ca.location``.  ``confluent_kafka.Producer(cluster.kafka_client_config())``."""
        return {"bootstrap.servers": self.kafka_bootstrap, **self.security.librdkafka(user)}

    def kafka_python_config(self, user: str | None = None) -> dict[str, str]:
        """kafka-python's keyword arguments for the Kafka listener (``bootstrap_servers``,
        ``security_protocol``, ``sasl_*``, ``ssl_cafile``)."""
        return {"bootstrap_servers": self.kafka_bootstrap, **self.security.kafka_python(user)}

    def java_client_properties(self, user: str | None = None) -> str:
        """A Java client's properties for the Kafka listener (``bootstrap.servers`` and the
        security settings), the text of a file for ``--command-config`` or a JUnit test."""
        return f"bootstrap.servers={self.kafka_bootstrap}\n" + self.security.java_properties(user)

    def endpoint(self, broker_id: int) -> str:
        """The msgpack/HTTP ``host:port`` of a broker."""
        return f"127.0.0.1:{self.brokers[broker_id]}"

    def kafka_endpoint(self, broker_id: int) -> str:
        """The Kafka-protocol ``host:port`` of a broker."""
        return f"127.0.0.1:{self.kafka_ports[broker_id]}"

    def pid(self, broker_id: int) -> int | None:
        """The recorded pid of a broker."""
        return load(self.dir).broker(broker_id).pid

    # -- health -----------------------------------------------------------------------------
    def broken(self) -> list[str]:
        """What is not as a healthy cluster has it, one line each, from process states and
        the faults in force (cheap: no request to any broker): a broker or ZooKeeper server
        not running, a link fault, a recorded fault not healed."""
        out = [f"fault {a.id} not healed: {a.text}" for a in self.faults.active()]
        state = load(self.dir)
        for bid, b in sorted(state.brokers.items()):
            st = launcher.proc_state(b.pid)
            if st != "running":
                out.append(f"broker {bid} is {'paused' if st == 'stopped' else 'not running'}")
        zk = state.zookeeper
        if not zk.external:
            for s in (zk.servers or [None]):
                if launcher.proc_state(s.pid if s is not None else zk.pid) != "running":
                    out.append(f"ZooKeeper server {s.id if s is not None else 1} is not running")
        if self.links is not None and self.links.links.active():
            out += [f"link fault in force: {c.description}" for c in self.links.links.active()]
        return out

    def registered(self) -> list[int]:
        """The broker ids registered in ZooKeeper now."""
        return sorted(int(i) for i in self.zk.children(layout.BROKER_IDS))

    def heal(self, timeout_s: float = 120.0) -> list[str]:
        """Undo every fault (:meth:`Faults.heal_all`), then wait until every broker is
        registered and every partition of every topic has a leader and all its replicas
        in the ISR.  Returns what was done."""
        done = self.faults.heal_all()
        wait_until(lambda: self.registered() == sorted(self.brokers), timeout_s, "every broker to be registered")
        self.wait.isr_full(timeout_s=timeout_s)
        return done

    # -- stop -------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop every process (SIGTERM, SIGKILL after a grace period; then SIGKILL any pid
        still recorded) and remove the link rules and cgroups."""
        if self.stopped:
            return
        self.stopped = True
        try:
            self.zk.close()
        except Exception:
            pass
        if not self.owns_processes:
            return
        try:
            launcher.down(self.dir)
        finally:
            _kill_recorded(self.dir)
            if self._links is not None:
                self._links.close()
            if self._owned_dir is not None:
                shutil.rmtree(self._owned_dir, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _kill_recorded(dir: str) -> None:
    import signal

    try:
        state = load(dir)
    except Exception:
        return
    ours = launcher.folder_markers(dir)  # not a recorded pid another process took over since
    for pid in state.pids():
        if launcher.proc_state(pid, ours) != "dead":
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _links_wanted(links: str) -> bool:
    from ..chaos.links import unavailable

    if links not in ("auto", "on", "off"):
        raise ClientError(f"links must be auto, on or off, got {links!r}")
    if links == "off":
        return False
    why = unavailable()
    if why and links == "on":
        raise ClientError(why)
    return why is None


def start_cluster(dir: str | None = None, brokers: int = 3, broker_configs: dict[str, str] | None = None,
                  storage: str = "memory", links: str = "auto", zookeeper_nodes: int = 1, timeout_s: float = 120.0,
                  attempts: int = 3, security: Security | str | None = None) -> LocalCluster:
    """Start ZooKeeper and ``brokers`` brokers on free loopback ports and return the
    :class:`LocalCluster` once every broker is registered, answers and knows the
    controller and every other broker.

    ``dir``: the cluster folder (default: a new temporary folder, removed by
    :meth:`LocalCluster.stop`); ``broker_configs`` are added to
    :func:`default_broker_configs`; ``links``: ``auto`` starts the brokers in cgroups of
    their own when link faults are possible here, ``on`` requires it, ``off`` never;
    ``security``: the Kafka listener's protocol (a :class:`~.security.Security`, or its
    name: ``SASL_PLAINTEXT`` with the default users, ``SSL``, ``SASL_SSL``)."""
    owned = None
    if dir is None:
        owned = tempfile.mkdtemp(prefix="minikafka-test-")
        dir = os.path.join(owned, "cluster")
    configs = {**default_broker_configs(brokers), **{str(k): str(v) for k, v in (broker_configs or {}).items()}}
    sec = Security(security) if isinstance(security, str) else security or Security()
    sec, secured = sec.prepare(dir.rstrip("/") + ".security", configs)
    configs = {**configs, **secured}
    link_set = cluster_links = None
    wrap = None
    if _links_wanted(links):
        from ..chaos.links import ClusterLinks, Links

        link_set = Links().open()
        wrap = ClusterLinks.wrap_for(link_set)
    last: Exception | None = None
    try:
        for _ in range(attempts):
            zk_port = free_ports.free_port()
            base = free_ports.free_port_block(brokers, avoid=(zk_port,))
            kafka_base = free_ports.free_port_block(brokers, avoid=(zk_port, *range(base, base + brokers)))
            try:
                state = launcher.up(dir, brokers=brokers, zookeeper_port=zk_port, base_port=base, storage=storage,
                                    broker_configs=configs, timeout_s=timeout_s, kafka_base_port=kafka_base,
                                    wrap=wrap, zookeeper_nodes=zookeeper_nodes)
            except ClientError as exc:
                _kill_recorded(dir)
                if "in use" not in str(exc):
                    raise
                last = exc
                continue
            if link_set is not None:
                from ..chaos.links import ClusterLinks

                cluster_links = ClusterLinks(link_set, state)
            cluster = LocalCluster(dir, state, link_set, cluster_links, configs, owned, security=sec)
            try:
                _wait_metadata_complete(cluster, timeout_s)
            except BaseException:
                cluster.stop()
                raise
            return cluster
        raise ClientError(f"could not start a cluster on free ports: {last}")
    except BaseException:
        if link_set is not None and cluster_links is None:
            link_set.close()
        if owned is not None and cluster_links is None:
            shutil.rmtree(owned, ignore_errors=True)
        raise


def _wait_metadata_complete(cluster: LocalCluster, timeout_s: float) -> None:
    """Every broker's metadata names the controller and every broker (``up`` waits for
    ZooKeeper only: a broker may not have had its first UpdateMetadata yet)."""
    from ..client.sync import Admin

    deadline = time.monotonic() + timeout_s
    for bid in cluster.brokers:
        with Admin(cluster.endpoint(bid)) as admin:
            def complete() -> bool:
                c = admin.cluster()
                return c.controller_id >= 0 and len(c.brokers) == len(cluster.brokers)
            wait_until(complete, max(deadline - time.monotonic(), 1.0),
                       f"broker {bid}'s metadata to know the controller and every broker", interval_s=0.02)
