"""The local launcher behind ``minikafka cluster ...``.

``up`` starts a real ZooKeeper and N broker processes in the background on
loopback, records them in the cluster folder's ``cluster.json`` (see
:mod:`minikafka.cluster.state`) and waits until the cluster is usable: every
broker registered under ``/brokers/ids``, a controller elected, and every broker
answering ``POST /v1/api_versions``.  The other functions act on a recorded
cluster: ``status``, ``down``, ``kill`` (SIGKILL / SIGTERM / SIGSTOP one broker),
``start`` (restart a broker with the argv it was first started with),
``resume`` (SIGCONT), and ``zookeeper_kill`` / ``zookeeper_start`` (one ZooKeeper
server, by id: with ``up(zookeeper_nodes=3)`` ZooKeeper is a 3-server ensemble).

Processes are always found by the pids recorded in cluster.json, never by name.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..config import SENSITIVE_CONFIGS, BrokerConfig
from ..errors import ClientError
from ..polling import poll
from ..zk import layout
from ..zk.launcher import is_no_node, server_mode, split_connect, wait_until_serving
from ..zk.probe import probe_client
from . import free_ports
from .state import (
    DEFAULT_DIR,
    BrokerState,
    ClusterState,
    ZooKeeperServer,
    ZooKeeperState,
    exists,
    load,
    process_state,
    save,
)

HOST = "127.0.0.1"
SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "STOP": signal.SIGSTOP}
STOP_GRACE_S = 15.0
POLL_S = 0.1
ZK_READ_TIMEOUT_S = 3.0


# ---------------------------------------------------------------- processes

OURS = (b"minikafka",)  # what the command line of a process this module started holds


def _is_ours(pid: int | None, markers: tuple[bytes, ...] = OURS) -> bool:
    """True when ``pid``'s command line holds one of ``markers`` (by default: it runs a
    minikafka command); guards against a recycled pid."""
    if not pid:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return not Path("/proc/self").exists()  # no /proc on this system: trust the record
    except OSError:
        return True
    if not cmdline:
        # Between Popen's return and the end of the exec the kernel shows an empty command
        # line; a zombie's is empty too, but process_state counts zombies as dead first.
        return True
    return any(m in cmdline for m in markers)


def folder_markers(dir: str | os.PathLike) -> tuple[bytes, ...]:
    """Markers that only the processes of the cluster in ``dir`` hold in their command
    lines: the folder's path (every broker's data dir and every ZooKeeper server's
    configuration are in it), as given and resolved.  Stronger than :data:`OURS`, which
    any minikafka process holds: a recorded pid that another cluster's process took over
    since is not this cluster's."""
    return tuple(dict.fromkeys((os.fsencode(str(Path(dir).resolve())), os.fsencode(os.fspath(dir)))))


def proc_state(pid: int | None, markers: tuple[bytes, ...] = OURS) -> str:
    """``running`` / ``stopped`` / ``dead`` for a recorded pid (a recycled pid, one whose
    command line holds none of ``markers``, counts as dead)."""
    state = process_state(pid)
    if state != "dead" and not _is_ours(pid, markers):
        return "dead"
    return state


def _alive(pid: int | None, markers: tuple[bytes, ...] = OURS) -> bool:
    return proc_state(pid, markers) != "dead"


def _wait_dead(pid: int, timeout_s: float) -> bool:
    return bool(poll(lambda: process_state(pid) == "dead", timeout_s, POLL_S))


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def stop_pid(pid: int | None, grace_s: float = STOP_GRACE_S, markers: tuple[bytes, ...] = OURS) -> str:
    """SIGTERM ``pid`` (and SIGCONT, in case it is paused), SIGKILL it after ``grace_s``;
    a pid whose command line holds none of ``markers`` is never signalled.

    Returns ``"not running"``, ``"stopped"`` (exited after SIGTERM) or ``"killed"``.
    """
    if not _alive(pid, markers):
        return "not running"
    assert pid is not None
    _signal(pid, signal.SIGTERM)
    _signal(pid, signal.SIGCONT)
    if _wait_dead(pid, grace_s):
        return "stopped"
    _signal(pid, signal.SIGKILL)
    _wait_dead(pid, 5.0)
    return "killed"


# Popen objects of the processes this Python process started.  Keeping them avoids
# "subprocess is still running" warnings when they are garbage collected; the
# processes themselves are found (and reaped) by pid, see state.process_state.
_STARTED: list[subprocess.Popen] = []


def _spawn(argv: list[str], log: str, append: bool) -> subprocess.Popen:
    """Start ``argv`` in its own session with stdout and stderr going to ``log``."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(log, "ab" if append else "wb") as out:
        if append:
            out.write(f"\n--- restarted at {time.strftime('%Y-%m-%d %H:%M:%S')} ---\n".encode())
            out.flush()
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, env=env, close_fds=True,
        )
    _STARTED[:] = [p for p in _STARTED if p.returncode is None] + [proc]
    return proc


def log_tail(log: str | None, lines: int = 6) -> str:
    """The last non-empty lines of a log file joined on one line with `` | ``."""
    if not log:
        return "(no log)"
    try:
        with open(log, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 16384))
            text = f.read().decode(errors="replace")
    except OSError:
        return f"(cannot read {log})"
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
    return " | ".join(kept) if kept else "(log is empty)"


def startup_failure(what: str, code: int, log: str | None) -> str:
    """Why a process exited during start-up, cause first: the last ``minikafka: error:``
    line it wrote to ``log`` since its latest (re)start, e.g. "broker 2 cannot start:
    cannot listen on 127.0.0.1:9093: address already in use (exit status 2; log:
    .minikafka/broker-2.log)"; without such a line, the last lines of the log."""
    lines: list[str] = []
    if log:
        try:
            with open(log, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 65536))
                text = f.read().decode(errors="replace")
        except OSError:
            text = ""
        _, marker, since = text.rpartition("\n--- restarted at ")
        if marker:  # this start only, not an earlier run's (the marker line itself neither)
            text = since.partition("\n")[2]
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("minikafka: error:")]
    if errors:
        cause = errors[-1].removeprefix("minikafka: error:").strip()
        if not cause.startswith(what):
            cause = f"{what} cannot start: {cause}"
        return f"{cause} (exit status {code}; log: {log})"
    tail = " | ".join(lines[-6:]) if lines else "(log is empty)"
    return f"{what} exited during start-up (status {code}); last lines of {log}: {tail}"


def port_free(port: int, host: str = HOST) -> bool:
    """True when nothing listens on host:port (a server can bind it: closed connections
    still in TIME_WAIT do not count, as the servers set ``SO_REUSEADDR``)."""
    return free_ports.port_free(port, host, reuse_address=True)


def _dir_flag(dir: str | os.PathLike) -> str:
    return "" if str(dir) == DEFAULT_DIR else f" --dir {dir}"


# ---------------------------------------------------------------- probes

def api_versions(host: str, port: int, timeout_s: float = 2.0) -> dict | None:
    """POST /v1/api_versions to a broker; the decoded response map, or None if it does not answer."""
    from ..rpc import call_sync

    try:
        return call_sync(host, port, "api_versions", {}, timeout_s)
    except Exception:  # no answer, or an undecodable one: not ready (or not a minikafka broker)
        return None


class _ZkReader:
    """A short-lived ZooKeeper session (zk/probe.py) for a few reads; every failure reads as 'unknown'."""

    def __init__(self, connect: str, timeout_s: float = ZK_READ_TIMEOUT_S) -> None:
        self.client = None
        try:
            self.client = probe_client(connect, timeout_s=timeout_s)
        except Exception:
            self.client = None

    @property
    def ok(self) -> bool:
        return self.client is not None and self.client.connected

    def children(self, path: str) -> list[str] | None:
        if not self.ok:
            return None
        try:
            return self.client.get_children(path)
        except Exception as exc:
            return [] if is_no_node(exc) else None

    def get(self, path: str) -> tuple[bytes, Any] | None:
        if not self.ok:
            return None
        try:
            return self.client.get(path)
        except Exception:
            return None

    def controller(self) -> int | None:
        got = self.get(layout.CONTROLLER)
        if not got:
            return None
        try:
            return layout.decode_controller(got[0])
        except (ValueError, KeyError, TypeError):
            return None

    def controller_epoch(self) -> int | None:
        got = self.get(layout.CONTROLLER_EPOCH)
        if not got:
            return None
        try:
            value = json.loads(got[0])  # Kafka stores a bare number: b"3"
            return int(value["epoch"] if isinstance(value, dict) else value)
        except (ValueError, KeyError, TypeError):
            return None

    def registration_owner(self, broker_id: int) -> int | None:
        """The session id owning /brokers/ids/N, or None when it is not registered."""
        got = self.get(layout.broker_path(broker_id))
        return got[1].ephemeralOwner if got else None

    def close(self) -> None:
        if self.client is not None:
            try:
                self.client.stop()
                self.client.close()
            except Exception:
                pass
            self.client = None

    def __enter__(self) -> "_ZkReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------- up

SECRET_FILE = "cluster-secret"
SECRET_CONFIGS_FILE = "broker-secrets.properties"


def write_private(path: Path | str, text: str) -> None:
    """Write ``text`` to ``path`` readable by the owner only (mode 600 from its creation:
    never world-readable, even for a moment)."""
    tmp = f"{path}.tmp"
    if os.path.exists(tmp):
        os.remove(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def secret_configs_file(folder: Path, configs: dict[str, str]) -> str | None:
    """Write the sensitive broker settings of ``configs`` (ssl.key.password...) to a file
    of the cluster folder, mode 600, for the brokers' ``--config-file``: a command line is
    visible to every local user (``ps``).  None when there are none."""
    secret = {k: v for k, v in configs.items() if k in SENSITIVE_CONFIGS}
    if not secret:
        return None
    path = folder / SECRET_CONFIGS_FILE
    write_private(path, "".join(f"{k}={v}\n" for k, v in secret.items()))
    return str(path)


def cluster_secret_file(folder: Path) -> str:
    """The cluster credential in the cluster folder: made once (random, readable by the
    owner only), then reused so that restarted brokers keep talking to the others."""
    path = folder / SECRET_FILE
    if not path.exists() or not path.read_text(encoding="utf-8").strip():
        write_private(path, secrets.token_urlsafe(32) + "\n")
    return str(path)


def _broker_argv(broker_id: int, connect: str, port: int, data_dir: str, storage: str,
                 configs: dict[str, str], kafka_port: int | None = None, secret_file: str | None = None,
                 config_file: str | None = None) -> list[str]:
    """The broker's command line: sensitive settings are left out (they are in
    ``config_file``, see :func:`secret_configs_file`)."""
    argv = [sys.executable, "-m", "minikafka", "broker", "--id", str(broker_id), "--zookeeper", connect,
            "--listen", f"{HOST}:{port}", "--data-dir", data_dir, "--storage", storage]
    if secret_file is not None:
        argv += ["--cluster-secret-file", secret_file]
    if kafka_port is not None:
        argv += ["--kafka-listen", f"{HOST}:{kafka_port}"]
    if config_file is not None:
        argv += ["--config-file", config_file]
    for key, value in configs.items():
        if key not in SENSITIVE_CONFIGS:
            argv += ["--config", f"{key}={value}"]
    return argv


def _zookeeper_argv(server: ZooKeeperServer, servers: list[ZooKeeperServer]) -> list[str]:
    """The command line of one ensemble member: ``minikafka zookeeper`` with its id and
    the ``server.N`` line of every member."""
    argv = [sys.executable, "-m", "minikafka", "zookeeper", "--port", str(server.client_port),
            "--data-dir", server.data_dir or "", "--server-id", str(server.id)]
    for s in servers:
        argv += ["--server", f"{s.id}={HOST}:{s.peer_port}:{s.election_port}"]
    return argv


def _probe_until(connect: str, ready: Callable[[_ZkReader], str | None], deadline: float,
                 started: dict[int, tuple[subprocess.Popen, str | None]],
                 timed_out: Callable[[str], str]) -> None:
    """Poll a starting cluster until ``ready`` returns None.  ``ready`` gets a ZooKeeper
    reader of ``connect`` (a new one whenever the last lost its session) and returns what
    it still waits for.  A :class:`ClientError` when a broker of ``started`` (id: its
    process and log) exits (why, from its log), or at ``deadline`` (``timed_out`` of what
    was awaited last: "ZooKeeper" until a reader connected)."""
    waiting = "ZooKeeper"
    reader: _ZkReader | None = None

    def probe() -> bool:
        nonlocal reader, waiting
        for bid, (proc, log) in started.items():
            code = proc.poll()
            if code is not None:
                raise ClientError(startup_failure(f"broker {bid}", code, log))
        if reader is None or not reader.ok:
            if reader is not None:
                reader.close()
            reader = _ZkReader(connect, timeout_s=2.0)
        if not reader.ok:
            return False
        awaited = ready(reader)
        if awaited is None:
            return True
        waiting = awaited
        return False

    try:
        if not poll(probe, deadline - time.monotonic(), POLL_S * 2):
            raise ClientError(timed_out(waiting))
    finally:
        if reader is not None:
            reader.close()


def _check_ready(state: ClusterState, procs: dict[int, subprocess.Popen], deadline: float) -> None:
    """Wait until every broker is registered and answers, and a controller exists."""
    answering: set[int] = set()

    def ready(reader: _ZkReader) -> str | None:
        ids = reader.children(layout.BROKER_IDS) or []
        registered = {bid for bid in state.brokers if str(bid) in ids}
        controller = reader.controller()
        for bid in sorted(registered - answering):
            b = state.brokers[bid]
            if api_versions(b.host, b.port) is not None:
                answering.add(bid)
        missing = sorted(set(state.brokers) - registered)
        silent = sorted(registered - answering)
        if missing:
            return "registration of broker(s) " + ", ".join(map(str, missing))
        if controller is None:
            return "a controller to be elected"
        if silent:
            return "api_versions answers from broker(s) " + ", ".join(map(str, silent))
        return None

    _probe_until(state.zookeeper.connect, ready, deadline,
                 {bid: (proc, state.brokers[bid].log) for bid, proc in procs.items()},
                 lambda waiting: f"the cluster did not become ready in time: still waiting for {waiting}; "
                                 f"logs are in {state.dir}")


@dataclass(frozen=True)
class UpOptions:
    """What :func:`up` starts: its keywords but the two callbacks (see :func:`up` for
    each); :meth:`check` refuses a bad combination before anything starts."""

    dir: str = DEFAULT_DIR
    brokers: int = 3
    zookeeper_port: int = 2181
    base_port: int = 9092
    zookeeper: str | None = None
    storage: str = "memory"
    broker_configs: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 60
    kafka_base_port: int | None = None
    kafka: bool = True
    wrap: Callable[[int], list[str]] | None = None
    zookeeper_acl: bool = True
    zookeeper_nodes: int = 1
    zookeeper_chroot: str = ""

    @property
    def configs(self) -> dict[str, str]:
        """The brokers' settings: ``broker_configs`` as strings, after
        ``zookeeper.set.acl=true`` when ``zookeeper_acl`` (a given value wins)."""
        configs = {str(k): str(v) for k, v in self.broker_configs.items()}
        return {"zookeeper.set.acl": "true", **configs} if self.zookeeper_acl else configs

    @property
    def chroot(self) -> str:
        return self.zookeeper_chroot.rstrip("/")

    def check(self) -> None:
        """A :class:`ClientError` (one line naming the command-line flag) for a bad value
        or combination, or a bad broker setting."""
        if self.brokers < 1:
            raise ClientError(f"--brokers must be at least 1, got {self.brokers}")
        if self.storage not in ("memory", "disk"):
            raise ClientError(f"--storage must be memory or disk, got {self.storage!r}")
        if self.zookeeper_nodes < 1:
            raise ClientError(f"--zookeeper-nodes must be at least 1, got {self.zookeeper_nodes}")
        if self.zookeeper and self.zookeeper_nodes != 1:
            raise ClientError("--zookeeper-nodes starts our own ensemble: it cannot be used with --zookeeper")
        chroot = self.chroot
        if self.zookeeper and chroot:
            raise ClientError("--zookeeper-chroot is for our own ZooKeeper: give an external one's chroot at the "
                              "end of --zookeeper (HOST:PORT/CHROOT)")
        if chroot and (not chroot.startswith("/") or "//" in chroot or "," in chroot or ":" in chroot):
            raise ClientError(f"--zookeeper-chroot must be a ZooKeeper path such as /kafka, "
                              f"got {self.zookeeper_chroot!r}")
        BrokerConfig(broker_id=1, zookeeper_connect="127.0.0.1:2181", storage=self.storage, settings=self.configs)


def up(dir: str | os.PathLike = DEFAULT_DIR, brokers: int = 3, zookeeper_port: int = 2181,
       base_port: int = 9092, zookeeper: str | None = None, storage: str = "memory",
       broker_configs: dict[str, str] | None = None, timeout_s: float = 60,
       on_progress: Callable[[str], None] | None = None, kafka_base_port: int | None = None,
       kafka: bool = True, wrap: Callable[[int], list[str]] | None = None,
       on_warning: Callable[[str], None] | None = None, zookeeper_acl: bool = True,
       zookeeper_nodes: int = 1, zookeeper_chroot: str = "") -> ClusterState:
    """Start ZooKeeper (unless ``zookeeper`` names an external one) and ``brokers`` brokers.

    With ``zookeeper_nodes`` > 1 ZooKeeper is an ensemble of that many servers (ids
    1..N): server 1 takes ``zookeeper_port`` as its client port, every other port (the
    other client ports, each server's quorum and leader-election ports) is a free port
    chosen now; the brokers get every server in their ``zookeeper.connect``.
    ``zookeeper_chroot`` (``/kafka``) puts the cluster's znodes under that path of our
    ZooKeeper, as a chroot at the end of Kafka's ``zookeeper.connect`` does
    (``h1:p1,h2:p2,h3:p3/kafka``); it is created before the brokers start.

    Broker ids are 1..N listening on 127.0.0.1 ports ``base_port``..``base_port+N-1``
    (msgpack/HTTP and the dashboard) and, unless ``kafka`` is false, serving Kafka's
    binary protocol on ``kafka_base_port``..``kafka_base_port+N-1`` (default
    :func:`default_kafka_base_port`: 29092 for 9092).
    With ``storage="memory"`` our ZooKeeper starts empty, so every ``up`` is a new
    cluster.  ``on_progress`` is called with a short message as each step begins.
    ``wrap`` gives a command prefix for broker N that runs the broker (for example one
    that moves the process into a cgroup, see :mod:`minikafka.chaos.links`); it is
    recorded with the argv, so :func:`start` restarts the broker the same way.
    ``on_warning`` is called with one line when a port to listen on lies in the
    machine's ephemeral range, where outgoing connections may take it at any moment.
    With ``zookeeper_acl`` (the default) the brokers run with ``zookeeper.set.acl=true``
    and the cluster credential: only holders of the credential may change the cluster's
    znodes, everyone may read them (docs/security.md); a ``zookeeper.set.acl`` in
    ``broker_configs`` wins.
    On any failure everything started is stopped again and a
    :class:`ClientError` says why (quoting the failing process's log).
    The keywords but the two callbacks make an :class:`UpOptions`; :func:`up_options`
    takes one.
    """
    opts = UpOptions(dir=str(dir), brokers=brokers, zookeeper_port=zookeeper_port, base_port=base_port,
                     zookeeper=zookeeper, storage=storage, broker_configs=dict(broker_configs or {}),
                     timeout_s=timeout_s, kafka_base_port=kafka_base_port, kafka=kafka, wrap=wrap,
                     zookeeper_acl=zookeeper_acl, zookeeper_nodes=zookeeper_nodes, zookeeper_chroot=zookeeper_chroot)
    return up_options(opts, on_progress=on_progress, on_warning=on_warning)


def up_options(opts: UpOptions, on_progress: Callable[[str], None] | None = None,
               on_warning: Callable[[str], None] | None = None) -> ClusterState:
    """:func:`up` with its options made already: check them, refuse a running cluster in
    the folder and busy ports, then start ZooKeeper and the brokers and wait until the
    cluster is ready (everything started is stopped again on a failure)."""
    opts.check()
    _refuse_running(opts.dir)
    ports = _plan_ports(opts, on_warning)
    servers = _ensemble_servers(opts, taken=ports.all)
    progress = on_progress or (lambda message: None)
    folder = Path(opts.dir)
    folder.mkdir(parents=True, exist_ok=True)
    root = folder.resolve()
    deadline = time.monotonic() + opts.timeout_s
    state = ClusterState(zookeeper=_zookeeper_state(opts, root, servers), storage=opts.storage, brokers={},
                         dir=opts.dir)
    try:
        _start_zookeeper(state, opts, deadline, progress)
        procs = _start_brokers(state, opts, root, ports.kafka, progress)
        progress("waiting for registrations and a controller")
        _check_ready(state, procs, deadline)
    except BaseException:
        _stop_all(state)
        raise
    return state


def _refuse_running(dir: str) -> None:
    """A :class:`ClientError` when the cluster recorded in ``dir`` still has a live process."""
    if exists(dir):
        old = load(dir)
        live = [pid for pid in old.pids() if _alive(pid, folder_markers(dir))]
        if live:
            raise ClientError(f"a cluster is already running in {dir} (pids {', '.join(map(str, live))}): "
                              f"stop it with `minikafka cluster down{_dir_flag(dir)}` or use another --dir")


@dataclass
class _Ports:
    """The ports :func:`up` listens on: ``kafka`` per broker (None without Kafka's
    protocol), ``all`` every port of the cluster (our ZooKeeper's client port first,
    then the brokers', then their Kafka ports)."""

    kafka: list[int | None]
    all: list[int]


def _plan_ports(opts: UpOptions, on_warning: Callable[[str], None] | None) -> _Ports:
    """The cluster's ports; a :class:`ClientError` when they overlap or one is in use or
    invalid, a warning when one lies in the ephemeral range."""
    brokers, base_port = opts.brokers, opts.base_port
    ports = [base_port + i for i in range(brokers)]
    kafka_ports: list[int | None] = [None] * brokers
    if opts.kafka:
        first = default_kafka_base_port(base_port, brokers) if opts.kafka_base_port is None else opts.kafka_base_port
        kafka_ports = [first + i for i in range(brokers)]
        overlap = sorted(set(kafka_ports) & set(ports))
        if overlap:
            raise ClientError(f"the Kafka ports {first}-{first + brokers - 1} overlap the broker ports "
                              f"{ports[0]}-{ports[-1]}: choose another --kafka-base-port")
        ports = ports + kafka_ports  # type: ignore[operator]
    if not opts.zookeeper:
        if opts.zookeeper_port in ports:
            raise ClientError(f"ZooKeeper port {opts.zookeeper_port} overlaps the broker ports "
                              f"{ports[0]}-{ports[-1]}")
        ports = [opts.zookeeper_port] + ports
    busy = [p for p in ports if not (0 < p < 65536) or not port_free(p)]
    if busy:
        raise ClientError(f"port(s) {', '.join(map(str, busy))} on {HOST} are in use or invalid: "
                          "choose others with --base-port / --kafka-base-port / --zookeeper-port")
    warning = free_ports.ephemeral_warning(ports)
    if warning and on_warning:
        on_warning(warning)
    return _Ports(kafka=kafka_ports, all=ports)


def _ensemble_servers(opts: UpOptions, taken: list[int]) -> list[ZooKeeperServer]:
    """The members of our ZooKeeper ensemble (none for a single server or an external
    ZooKeeper): server 1's client port is ``zookeeper_port``, every other port is a free
    one outside ``taken``."""
    servers: list[ZooKeeperServer] = []
    if not opts.zookeeper and opts.zookeeper_nodes > 1:
        taken = list(taken)
        for sid in range(1, opts.zookeeper_nodes + 1):
            chosen = [opts.zookeeper_port] if sid == 1 else []
            while len(chosen) < 3:
                chosen.append(free_ports.free_port(avoid=taken + chosen, host=HOST))
            taken += chosen
            servers.append(ZooKeeperServer(id=sid, client_port=chosen[0], peer_port=chosen[1],
                                           election_port=chosen[2]))
    return servers


def _zookeeper_state(opts: UpOptions, root: Path, servers: list[ZooKeeperServer]) -> ZooKeeperState:
    """The ZooKeeper record of the cluster in ``root``: external, an ensemble of
    ``servers`` (their logs, data folders and command lines filled in) or one server."""
    chroot = opts.chroot
    if opts.zookeeper:
        return ZooKeeperState(connect=opts.zookeeper, port=None, pid=None, external=True)
    if servers:
        zk = ZooKeeperState(connect=",".join(f"{HOST}:{s.client_port}" for s in servers) + chroot,
                            port=opts.zookeeper_port, pid=None, external=False, servers=servers)
        for s in servers:
            s.log = str(root / f"zookeeper-{s.id}.log")
            s.data_dir = str(root / f"zookeeper-{s.id}")
            s.argv = _zookeeper_argv(s, servers)
        return zk
    return ZooKeeperState(connect=f"{HOST}:{opts.zookeeper_port}{chroot}", port=opts.zookeeper_port, pid=None,
                          external=False, log=str(root / "zookeeper.log"), data_dir=str(root / "zookeeper"))


def _start_zookeeper(state: ClusterState, opts: UpOptions, deadline: float,
                     progress: Callable[[str], None]) -> None:
    """Wait for an external ZooKeeper, or start ours (recording each pid in ``state`` as
    it starts) and wait until it serves; then create the chroot."""
    zk = state.zookeeper
    if zk.external:
        progress(f"connecting to ZooKeeper at {zk.connect}")
        try:
            wait_until_serving(zk.connect, timeout_s=min(opts.timeout_s, 15))
        except TimeoutError as exc:
            raise ClientError(str(exc)) from None
        _ensure_chroot(zk.connect)
        return
    if zk.servers:
        progress(f"starting a ZooKeeper ensemble of {len(zk.servers)} servers on {zk.connect}")
        zk_procs = []
        for server in zk.servers:
            if opts.storage == "memory":
                shutil.rmtree(server.data_dir or "", ignore_errors=True)
            proc = _spawn(server.argv, server.log or os.devnull, append=False)
            server.pid = proc.pid
            zk_procs.append(proc)
            save(state)
        try:
            wait_until_serving(zk.connect, timeout_s=max(deadline - time.monotonic(), 1),
                               alive=lambda: all(p.poll() is None for p in zk_procs))
        except TimeoutError as exc:
            tails = "; ".join(f"zookeeper-{s.id}.log: {log_tail(s.log, 3)}" for s in zk.servers)
            raise ClientError(f"{exc}; {tails}") from None
    else:
        progress(f"starting ZooKeeper on {zk.connect}")
        if opts.storage == "memory":
            shutil.rmtree(zk.data_dir, ignore_errors=True)
        argv = [sys.executable, "-m", "minikafka", "zookeeper", "--port", str(opts.zookeeper_port),
                "--data-dir", zk.data_dir]
        proc = _spawn(argv, zk.log, append=False)
        zk.pid = proc.pid
        save(state)
        try:
            wait_until_serving(zk.connect, timeout_s=max(deadline - time.monotonic(), 1),
                               alive=lambda: proc.poll() is None)
        except TimeoutError as exc:
            raise ClientError(f"{exc}; last lines of {zk.log}: {log_tail(zk.log)}") from None
    if opts.chroot:
        _ensure_chroot(zk.connect)


def _start_brokers(state: ClusterState, opts: UpOptions, root: Path, kafka_ports: list[int | None],
                   progress: Callable[[str], None]) -> dict[int, subprocess.Popen]:
    """Start brokers 1..N (recording each in ``state`` as it starts); their processes by id."""
    brokers, base_port, storage = opts.brokers, opts.base_port, opts.storage
    progress(f"starting 1 broker on port {base_port}" if brokers == 1
             else f"starting {brokers} brokers on ports {base_port}-{base_port + brokers - 1}")
    configs = opts.configs
    secret_file = cluster_secret_file(root)
    config_file = secret_configs_file(root, configs)
    procs: dict[int, subprocess.Popen] = {}
    for i in range(1, brokers + 1):
        port = base_port + i - 1
        data_dir = str(root / f"broker-{i}")
        if storage == "memory":
            shutil.rmtree(data_dir, ignore_errors=True)
        argv = _broker_argv(i, state.zookeeper.connect, port, data_dir, storage, configs, kafka_ports[i - 1],
                            secret_file, config_file)
        if opts.wrap is not None:
            argv = list(opts.wrap(i)) + argv
        b = BrokerState(id=i, host=HOST, port=port, pid=None, log=str(root / f"broker-{i}.log"),
                        data_dir=data_dir, argv=argv, kafka_port=kafka_ports[i - 1])
        state.brokers[i] = b
        proc = _spawn(argv, b.log, append=False)
        b.pid = proc.pid
        procs[i] = proc
        save(state)
    return procs


def _data_dirs(dir: str | os.PathLike) -> list[Path]:
    """The folders an earlier cluster in ``dir`` may have left data in: ZooKeeper's and
    every broker's (``broker-N``)."""
    folder = Path(dir)
    if not folder.is_dir():
        return []
    return ([folder / "zookeeper"] + sorted(p for p in folder.glob("zookeeper-*") if p.is_dir())
            + sorted(p for p in folder.glob("broker-*") if p.is_dir()))


def _data_name(folder: str) -> str:
    if folder == "zookeeper":
        return "ZooKeeper's data"
    if folder.startswith("zookeeper-"):
        return f"ZooKeeper server {folder.removeprefix('zookeeper-')}'s data"
    return f"{folder}'s logs"


def leftovers(dir: str | os.PathLike, brokers: int, external_zookeeper: bool = False) -> list[str]:
    """What ``up --storage disk`` would reuse from an earlier cluster in ``dir``: ZooKeeper
    data and broker logs that are not empty (a sentence fragment each)."""
    out = []
    for path in _data_dirs(dir):
        if path.name.startswith("zookeeper") and external_zookeeper:
            continue
        if path.name.startswith("broker-") and not path.name.removeprefix("broker-").isdigit():
            continue
        if path.name.startswith("broker-") and int(path.name.removeprefix("broker-")) > brokers:
            continue
        if path.is_dir() and any(path.iterdir()):
            out.append(_data_name(path.name))
    return out


def wipe(dir: str | os.PathLike) -> list[str]:
    """Delete the ZooKeeper data and broker logs an earlier cluster left in ``dir``
    (refused while that cluster runs); returns what was deleted."""
    if exists(dir):
        live = [pid for pid in load(dir).pids() if _alive(pid, folder_markers(dir))]
        if live:
            raise ClientError(f"a cluster is still running in {dir} (pids {', '.join(map(str, live))}): "
                              f"stop it with `minikafka cluster down{_dir_flag(dir)}` first")
    wiped = []
    for path in _data_dirs(dir):
        if path.exists():
            shutil.rmtree(path)
            wiped.append(_data_name(path.name))
    return wiped


def default_kafka_base_port(base_port: int, brokers: int, ephemeral: tuple[int, int] | None = None) -> int:
    """Where the Kafka listeners go without ``--kafka-base-port``: ``base_port + 20000``
    (9092 -> 29092), or ``base_port - 20000`` when that would pass port 65535 or put a
    listener in the machine's ephemeral range (:func:`free_ports.ephemeral_range`) while
    ``base_port - 20000`` would not."""
    eph = ephemeral or free_ports.ephemeral_range()
    candidates = [first for first in (base_port + 20000, base_port - 20000) if 0 < first and first + brokers - 1 <= 65535]
    for first in candidates:
        if not any(free_ports.in_ephemeral_range(p, eph) for p in range(first, first + brokers)):
            return first
    return candidates[0] if candidates else base_port - 20000


def _ensure_chroot(connect: str) -> None:
    """Create the chroot path of an external ZooKeeper connect string if it is missing."""
    hosts, chroot = split_connect(connect)
    if not chroot:
        return
    client = probe_client(hosts, timeout_s=5.0)
    try:
        client.ensure_path(chroot)
    finally:
        client.stop()
        client.close()


# ---------------------------------------------------------------- status

def _zk_process(zk: ZooKeeperState) -> str:
    """``external``, or the state of our ZooKeeper's process (of an ensemble: ``running``
    while any of its servers runs, else ``dead``)."""
    if zk.external:
        return "external"
    if zk.servers:
        states = [proc_state(s.pid) for s in zk.servers]
        return "running" if "running" in states else ("stopped" if "stopped" in states else "dead")
    return proc_state(zk.pid)


def zookeeper_servers(zk: ZooKeeperState) -> list[dict]:
    """One ``{id, client_port, pid, mode}`` per server of our ZooKeeper, ``mode`` read
    from the server's own ``srvr`` answer (see :func:`minikafka.zk.launcher.server_mode`:
    leader, follower, standalone, looking, or down when its process is gone or it does not
    answer).  A single server is id 1; an external ZooKeeper gives an empty list."""
    if zk.external:
        return []
    servers = zk.servers or [ZooKeeperServer(id=1, client_port=zk.port or 0, peer_port=0, election_port=0,
                                             pid=zk.pid)]
    rows = []
    for s in servers:
        alive = _alive(s.pid)
        rows.append({"id": s.id, "client_port": s.client_port, "pid": s.pid if alive else None,
                     "mode": server_mode(HOST, s.client_port) if alive else "down"})
    return rows


def status(dir: str | os.PathLike = DEFAULT_DIR) -> dict:
    """A snapshot of the recorded cluster: processes and what ZooKeeper says.

    Returns ``{"dir", "storage", "running", "zookeeper": {...}, "zookeeper_servers": [{"id",
    "client_port", "pid", "mode"}], "controller", "controller_epoch", "registered",
    "brokers": [{"id", "endpoint", "pid", "process", "alive", "registered", "controller",
    "log", ...}]}``.  ``registered`` is None when ZooKeeper could not be read; ``running``
    is False when none of the cluster's processes (brokers, our ZooKeeper) runs.  A
    process is ``running``, ``paused`` (SIGSTOP), ``stopped`` (exited on SIGTERM: ``cluster
    stop``, ``cluster down``, ``kill --signal TERM``) or ``dead`` (killed or crashed).
    """
    state = load(dir)
    zk = state.zookeeper
    zk_process = _zk_process(zk)
    serving, ids, controller, epoch = False, None, None, None
    if zk_process != "dead":  # our ZooKeeper is gone: do not wait for a connection
        with _ZkReader(zk.connect) as reader:
            serving = reader.ok
            ids = reader.children(layout.BROKER_IDS) if serving else None
            controller = reader.controller() if serving else None
            epoch = reader.controller_epoch() if serving else None
    registered = sorted(int(i) for i in ids) if ids is not None else None
    rows = []
    for bid, b in sorted(state.brokers.items()):
        pstate = proc_state(b.pid, folder_markers(dir))
        process = {"stopped": "paused"}.get(pstate, pstate)  # SIGSTOP
        if pstate == "dead" and b.exit == "stopped":
            process = "stopped"  # exited on SIGTERM: `cluster stop`, `cluster down`, `kill --signal TERM`
        rows.append({
            "id": bid, "host": b.host, "port": b.port, "endpoint": b.endpoint, "kafka_endpoint": b.kafka_endpoint,
            "pid": b.pid if pstate != "dead" else None, "recorded_pid": b.pid,
            "process": process, "alive": pstate != "dead",
            "registered": (bid in registered) if registered is not None else None,
            "controller": controller == bid if serving else None,
            "dashboard": f"http://{b.host}:{b.port}/", "log": b.log,
        })
    zk_shown = {"stopped": "paused"}.get(zk_process, zk_process)  # SIGSTOP, as for brokers
    if zk_process == "dead" and not zk.pids():
        zk_shown = "stopped"  # `cluster down` stopped it and cleared its pid(s); a kill keeps them
    return {
        "dir": str(dir),
        "storage": state.storage,
        "running": any(b["alive"] for b in rows) or zk_process in ("running", "stopped"),
        "zookeeper": {
            "connect": zk.connect, "pid": zk.pid if zk_process not in ("dead",) else None,
            "external": zk.external, "process": zk_shown,
            "alive": None if zk.external else zk_process != "dead",
            "serving": serving, "log": zk.log,
        },
        "zookeeper_servers": zookeeper_servers(zk),
        "controller": controller,
        "controller_epoch": epoch,
        "registered": registered,
        "brokers": rows,
    }


# ---------------------------------------------------------------- down / kill / start / resume

def _stop_all(state: ClusterState) -> dict[str, str]:
    """Stop every recorded process (controller broker last, ZooKeeper after the brokers);
    a recorded pid that no longer names the cluster's folder is another process's now."""
    results: dict[str, str] = {}
    ours = folder_markers(state.dir)
    order = sorted(state.brokers)
    if any(_alive(b.pid, ours) for b in state.brokers.values()) and _zk_process(state.zookeeper) != "dead":
        with _ZkReader(state.zookeeper.connect, timeout_s=2.0) as reader:
            controller = reader.controller()
        order.sort(key=lambda bid: bid == controller)
    for bid in order:
        b = state.brokers[bid]
        outcome = stop_pid(b.pid, markers=ours)
        results[f"broker {bid}"] = outcome
        if outcome == "stopped" or (outcome == "not running" and b.exit == "stopped"):
            b.exit = "stopped"  # exited on SIGTERM: status says stopped, not dead
        elif outcome == "killed":
            b.exit = None
        b.pid = None
        save(state)
    for server in state.zookeeper.servers:
        results[f"zookeeper {server.id}"] = stop_pid(server.pid, markers=ours)
        server.pid = None
        save(state)
    if not state.zookeeper.external and not state.zookeeper.servers:
        results["zookeeper"] = stop_pid(state.zookeeper.pid, markers=ours)
        state.zookeeper.pid = None
        save(state)
    return results


def down(dir: str | os.PathLike = DEFAULT_DIR) -> dict[str, str]:
    """Stop the brokers (SIGTERM, SIGKILL after 15 s) then our ZooKeeper (every server of
    an ensemble); keep the logs.

    Returns what happened to each process: ``{"broker 1": "stopped", ...,
    "zookeeper": "stopped"}`` (an ensemble: ``"zookeeper 1"``, ``"zookeeper 2"``...;
    each ``"stopped"``, ``"killed"`` or ``"not running"``).
    """
    return _stop_all(load(dir))


def kill(dir: str | os.PathLike, broker_id: int, signal_name: str = "KILL") -> int:
    """Send SIGKILL, SIGTERM or SIGSTOP to one broker; return its pid (SIGKILL waits until it is gone)."""
    name = signal_name.upper().removeprefix("SIG")
    if name not in SIGNALS:
        raise ClientError(f"unsupported signal {signal_name!r}: use KILL, TERM or STOP")
    state = load(dir)
    b = state.broker(broker_id)
    if not _alive(b.pid, folder_markers(dir)):
        raise ClientError(f"broker {broker_id} is not running: start it with "
                          f"`minikafka cluster start {broker_id}{_dir_flag(dir)}`")
    assert b.pid is not None
    _signal(b.pid, SIGNALS[name])
    if name != "STOP":
        # TERM asks for a controlled shutdown: once it has exited, status says stopped, not dead
        b.exit = "stopped" if name == "TERM" else None
        save(state)
    if name == "KILL":
        _wait_dead(b.pid, 5.0)
    return b.pid


def resume(dir: str | os.PathLike, broker_id: int) -> int:
    """Send SIGCONT to a broker paused with ``kill --signal STOP``; return its pid."""
    state = load(dir)
    b = state.broker(broker_id)
    if not _alive(b.pid, folder_markers(dir)):
        raise ClientError(f"broker {broker_id} is not running: start it with "
                          f"`minikafka cluster start {broker_id}{_dir_flag(dir)}`")
    assert b.pid is not None
    _signal(b.pid, signal.SIGCONT)
    return b.pid


def stop(dir: str | os.PathLike, broker_id: int, grace_s: float = STOP_GRACE_S) -> str:
    """Stop one broker gracefully (SIGTERM: controlled shutdown), SIGKILL after ``grace_s``.

    Returns ``"stopped"``, ``"killed"`` or ``"not running"``; the broker can be
    started again with :func:`start`.
    """
    state = load(dir)
    b = state.broker(broker_id)
    outcome = stop_pid(b.pid, grace_s, folder_markers(dir))
    if outcome == "stopped":
        b.exit = "stopped"
        save(state)
    return outcome


def check_startable(dir: str | os.PathLike, broker_id: int) -> tuple[ClusterState, BrokerState]:
    """The cluster state and the broker, or the ClientError that :func:`start` would raise
    (unknown broker, already running, paused, ZooKeeper down)."""
    state = load(dir)
    b = state.broker(broker_id)
    pstate = proc_state(b.pid, folder_markers(dir))
    if pstate == "running":
        raise ClientError(f"broker {broker_id} is already running (pid {b.pid})")
    if pstate == "stopped":
        raise ClientError(f"broker {broker_id} is paused (SIGSTOP): resume it with "
                          f"`minikafka cluster resume {broker_id}{_dir_flag(dir)}`")
    if not b.argv:
        raise ClientError(f"cluster.json has no command line for broker {broker_id}")
    zk = state.zookeeper
    if _zk_process(zk) == "dead":
        raise ClientError(f"ZooKeeper of cluster {dir} is not running: run `minikafka cluster down{_dir_flag(dir)}` "
                          f"then `minikafka cluster up`")
    return state, b


def start(dir: str | os.PathLike, broker_id: int, wait: bool = True, timeout_s: float = 60) -> BrokerState:
    """Restart a killed or stopped broker with its recorded argv; its log is appended to.

    With ``wait`` it returns once the new process has registered in ZooKeeper (a
    new session, not the dead one's leftover znode) and answers api_versions.
    """
    state, b = check_startable(dir, broker_id)
    zk = state.zookeeper
    old_owner = None
    if wait:
        with _ZkReader(zk.connect) as reader:
            old_owner = reader.registration_owner(broker_id)
    proc = _spawn(b.argv, b.log or os.devnull, append=True)
    b.pid = proc.pid
    b.exit = None
    save(state)
    if not wait:
        return b

    def registered(reader: _ZkReader) -> str | None:
        owner = reader.registration_owner(broker_id)
        if owner is not None and owner != old_owner and api_versions(b.host, b.port) is not None:
            return None
        return "its registration"

    _probe_until(zk.connect, registered, time.monotonic() + timeout_s, {broker_id: (proc, b.log)},
                 lambda waiting: f"broker {broker_id} (pid {b.pid}) did not register within {timeout_s:g} s; "
                                 f"see {b.log}")
    return b


# ---------------------------------------------------------------- one ZooKeeper server

def _zk_server(state: ClusterState, server_id: int) -> ZooKeeperServer:
    """Our ZooKeeper server ``server_id``: an ensemble member, or server 1 standing for a
    single ZooKeeper; ClientError for an external ZooKeeper or an unknown id."""
    zk = state.zookeeper
    if zk.external:
        raise ClientError(f"cluster {state.dir} uses an external ZooKeeper ({zk.connect}): it runs no server "
                          "of its own")
    if not zk.servers:
        if server_id != 1:
            raise ClientError(f"no ZooKeeper server {server_id} in cluster {state.dir} (it runs one server, 1; "
                              "start an ensemble with `cluster up --zookeeper-nodes 3`)")
        return ZooKeeperServer(id=1, client_port=zk.port or 0, peer_port=0, election_port=0, pid=zk.pid,
                               log=zk.log, data_dir=zk.data_dir,
                               argv=[sys.executable, "-m", "minikafka", "zookeeper", "--port", str(zk.port),
                                     "--data-dir", zk.data_dir or ""])
    return zk.server(server_id)


def _record_zk_pid(state: ClusterState, server_id: int, pid: int | None) -> None:
    if state.zookeeper.servers:
        state.zookeeper.server(server_id).pid = pid
    else:
        state.zookeeper.pid = pid
    save(state)


def zookeeper_kill(dir: str | os.PathLike, server_id: int) -> int:
    """SIGKILL ZooKeeper server ``server_id`` (by its recorded pid) and wait until it is
    gone; return its pid.  Its data folder stays: :func:`zookeeper_start` brings it back."""
    state = load(dir)
    server = _zk_server(state, server_id)
    if not _alive(server.pid, folder_markers(dir)):
        raise ClientError(f"ZooKeeper server {server_id} is not running: start it with "
                          f"`minikafka cluster zookeeper start {server_id}{_dir_flag(dir)}`")
    assert server.pid is not None
    _signal(server.pid, signal.SIGKILL)
    _wait_dead(server.pid, 5.0)
    return server.pid


def zookeeper_start(dir: str | os.PathLike, server_id: int, wait: bool = True,
                    timeout_s: float = 60) -> ZooKeeperServer:
    """Restart ZooKeeper server ``server_id`` with its recorded command line and data
    folder (its log is appended to).  With ``wait`` it returns once the server answers
    ``srvr`` as serving (leader, follower or standalone: it rejoined a quorum)."""
    state = load(dir)
    server = _zk_server(state, server_id)
    if _alive(server.pid, folder_markers(dir)):
        raise ClientError(f"ZooKeeper server {server_id} is already running (pid {server.pid})")
    proc = _spawn(server.argv, server.log or os.devnull, append=True)
    server.pid = proc.pid
    _record_zk_pid(state, server_id, proc.pid)
    if not wait:
        return server

    def serving() -> bool:
        if server_mode(HOST, server.client_port) in ("leader", "follower", "standalone"):
            return True
        code = proc.poll()
        if code is not None:
            raise ClientError(f"ZooKeeper server {server_id} exited during start-up (status {code}); "
                              f"last lines of {server.log}: {log_tail(server.log)}")
        return False

    if not poll(serving, timeout_s, POLL_S * 2):
        raise ClientError(f"ZooKeeper server {server_id} (pid {proc.pid}) does not serve after {timeout_s:g} s "
                          f"(it needs a quorum: a majority of the servers running); see {server.log}")
    return server
