"""The cluster folder's ``cluster.json``: which processes a local cluster runs.

``minikafka cluster up`` writes it; every other ``cluster`` command and the
clients' default ``--bootstrap-server`` read it.  Example::

    {"zookeeper": {"connect": "127.0.0.1:2181", "port": 2181, "pid": 123,
                   "external": false, "log": ".../zookeeper.log",
                   "data_dir": ".../zookeeper"},
     "storage": "memory",
     "brokers": {"1": {"id": 1, "host": "127.0.0.1", "port": 9092, "pid": 456,
                       "log": ".../broker-1.log", "data_dir": ".../broker-1",
                       "argv": ["python", "-m", "minikafka", "broker", ...],
                       "kafka_port": 29092}}}

A ``pid`` of ``null`` means the process is not running (stopped by ``down``).

With ``cluster up --zookeeper-nodes 3`` the ``zookeeper`` entry describes the
ensemble: ``connect`` lists every server (``127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3``),
its own ``pid`` is null, and ``servers`` holds one entry per server::

    "servers": [{"id": 1, "client_port": 2181, "peer_port": 2888, "election_port": 3888,
                 "pid": 123, "log": ".../zookeeper-1.log", "data_dir": ".../zookeeper-1",
                 "argv": ["python", "-m", "minikafka", "zookeeper", ...]}, ...]

(``servers`` is empty for a single server or an external ZooKeeper.)
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import ClientError

DEFAULT_DIR = ".minikafka"
STATE_FILE = "cluster.json"


@dataclass
class ZooKeeperServer:
    """One member of the cluster's ZooKeeper ensemble and the argv that starts it."""

    id: int
    client_port: int
    peer_port: int
    election_port: int
    pid: int | None = None
    log: str | None = None
    data_dir: str | None = None
    argv: list[str] = field(default_factory=list)


@dataclass
class ZooKeeperState:
    """The cluster's ZooKeeper: ours (``pid`` set), an ensemble of ours (``servers``)
    or an external one (``external``)."""

    connect: str
    port: int | None = None
    pid: int | None = None
    external: bool = False
    log: str | None = None
    data_dir: str | None = None
    servers: list[ZooKeeperServer] = field(default_factory=list)

    def server(self, server_id: int) -> ZooKeeperServer:
        """The ensemble member with this id, or a ClientError listing the known ids."""
        for s in self.servers:
            if s.id == server_id:
                return s
        known = ", ".join(str(s.id) for s in self.servers)
        what = f"(servers: {known})" if known else "(it runs no ensemble: start one with --zookeeper-nodes 3)"
        raise ClientError(f"no ZooKeeper server {server_id} in this cluster {what}")

    def pids(self) -> list[int]:
        """The recorded pids of our ZooKeeper server(s)."""
        return [p for p in [self.pid, *(s.pid for s in self.servers)] if p]


@dataclass
class BrokerState:
    """One broker process: its id, endpoint, pid, files and the argv that starts it."""

    id: int
    host: str
    port: int
    pid: int | None = None
    log: str | None = None
    data_dir: str | None = None
    argv: list[str] = field(default_factory=list)
    kafka_port: int | None = None  # Kafka binary-protocol listener (None: none)
    # "stopped" after `cluster stop` saw it exit on SIGTERM (cleared by `cluster start`),
    # so that status tells a clean stop from a crash or a kill.
    exit: str | None = None

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def kafka_endpoint(self) -> str | None:
        """``host:port`` of the Kafka-protocol listener, for kcat and Kafka clients."""
        return None if self.kafka_port is None else f"{self.host}:{self.kafka_port}"


@dataclass
class ClusterState:
    """Everything ``cluster.json`` records; ``dir`` is the cluster folder (not saved)."""

    zookeeper: ZooKeeperState
    storage: str = "memory"
    brokers: dict[int, BrokerState] = field(default_factory=dict)
    dir: str = DEFAULT_DIR

    def to_json(self) -> dict:
        """The JSON object written to cluster.json (broker ids become string keys)."""
        return {
            "zookeeper": asdict(self.zookeeper),
            "storage": self.storage,
            "brokers": {str(bid): asdict(b) for bid, b in sorted(self.brokers.items())},
        }

    @classmethod
    def from_json(cls, data: dict, dir: str | os.PathLike = DEFAULT_DIR) -> "ClusterState":
        zk_data = dict(data["zookeeper"])
        servers = [ZooKeeperServer(**s) for s in zk_data.pop("servers", [])]
        zk = ZooKeeperState(**zk_data, servers=servers)
        brokers = {}
        for key, b in data.get("brokers", {}).items():
            broker = BrokerState(**b)
            brokers[int(key)] = broker
        return cls(zookeeper=zk, storage=data.get("storage", "memory"), brokers=brokers, dir=str(dir))

    def broker(self, broker_id: int) -> BrokerState:
        """The broker with this id, or a ClientError listing the known ids."""
        try:
            return self.brokers[int(broker_id)]
        except KeyError:
            known = ", ".join(str(b) for b in sorted(self.brokers)) or "none"
            raise ClientError(f"no broker {broker_id} in cluster {self.dir} (brokers: {known})") from None

    def pids(self) -> list[int]:
        """Every recorded pid (brokers and our ZooKeeper)."""
        out = [b.pid for b in self.brokers.values() if b.pid]
        return out + self.zookeeper.pids()


def state_path(dir: str | os.PathLike) -> Path:
    return Path(dir) / STATE_FILE


def exists(dir: str | os.PathLike) -> bool:
    """True when ``dir`` holds a cluster.json."""
    return state_path(dir).is_file()


def load(dir: str | os.PathLike = DEFAULT_DIR) -> ClusterState:
    """Read ``dir``/cluster.json; ClientError when there is none (or it is unreadable)."""
    path = state_path(dir)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ClientError(f"no cluster in {os.path.abspath(dir)} (no {STATE_FILE} there): run `minikafka cluster "
                          f"up` first, or give the folder `cluster up` wrote with --dir DIR") from None
    except (OSError, ValueError) as exc:
        raise ClientError(f"cannot read {path}: {exc}") from None
    try:
        return ClusterState.from_json(data, dir)
    except (KeyError, TypeError, ValueError) as exc:
        raise ClientError(f"{path} is not a minikafka cluster file: {exc!r}") from None


def save(state: ClusterState) -> None:
    """Write cluster.json atomically (a half-written file is never seen)."""
    folder = Path(state.dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = state_path(folder)
    tmp = path.with_suffix(".json.tmp")
    if tmp.exists():
        tmp.unlink()
    # mode 600 from its creation: the file names the brokers' secret files and command lines
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(state.to_json(), indent=2) + "\n")
    os.replace(tmp, path)


def bootstrap_servers(dir: str | os.PathLike = DEFAULT_DIR) -> str:
    """``"127.0.0.1:9092,127.0.0.1:9093,..."`` for the brokers recorded in ``dir``.

    A ClientError at once, instead of a client waiting for brokers that are not there,
    when no cluster is recorded in ``dir`` (the message names its absolute path and
    ``--dir``) or when none of its recorded broker processes runs ("the cluster in DIR is
    down", with the command that starts it)."""
    try:
        state = load(dir)
    except ClientError as exc:
        if exists(dir):
            raise
        raise ClientError(f"{exc} (or the brokers with --bootstrap-server HOST:PORT)") from None
    if not state.brokers:
        raise ClientError(f"cluster {dir} has no brokers")
    if not any(pid_alive(b.pid) for b in state.brokers.values()):
        where = os.path.abspath(dir)
        flag = "" if str(dir) == DEFAULT_DIR else f" --dir {dir}"
        if state.zookeeper.external or any(pid_alive(p) for p in state.zookeeper.pids()):
            ids = " ".join(str(b) for b in sorted(state.brokers))
            raise ClientError(f"no broker of the cluster in {where} is running (all {len(state.brokers)} stopped "
                              f"or killed): start one with `minikafka cluster start ID{flag}` (IDs {ids})")
        raise ClientError(f"the cluster in {where} is down: start it with `minikafka cluster up{flag}`")
    return ",".join(b.endpoint for _, b in sorted(state.brokers.items()))


def process_state(pid: int | None) -> str:
    """``"running"``, ``"stopped"`` (SIGSTOP) or ``"dead"`` (gone or a zombie)."""
    if not pid:
        return "dead"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "dead"
    except PermissionError:
        return "running"  # exists, owned by someone else
    # Reap it if it is our own exited child (e.g. started by a test fixture).
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return "dead"
    except ChildProcessError:
        pass
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return "dead" if Path("/proc/self").exists() else "running"
    except OSError:
        return "running"
    for line in text.splitlines():
        if line.startswith("State:"):
            code = line.split()[1] if len(line.split()) > 1 else "R"
            if code in ("Z", "X"):
                return "dead"
            if code in ("T", "t"):
                return "stopped"
            return "running"
    return "running"


def pid_alive(pid: int | None) -> bool:
    """True while the process exists and is not a zombie (a stopped process is alive)."""
    return process_state(pid) != "dead"
