"""A real Apache Kafka 3.9 cluster in ZooKeeper mode, on this machine, on demand.

``minikafka reference up`` starts one ZooKeeper (the same ZooKeeper server minikafka's
own clusters use, through ``minikafka zookeeper``) and N Kafka 3.9 brokers (the
``kafka.Kafka`` main class of ``org.apache.kafka:kafka_2.13``), each with a small heap, on
free ports of 127.0.0.1 chosen at run time.  The jars come from Maven Central into the
cache that ``scripts/kafka-jars.sh 3.9`` fills (``~/.cache/minikafka/jars/3.9.x/``);
nothing downloaded is kept in the project.  ``reference.json`` in the folder records
the pids and ports, and ``reference down`` stops exactly those pids.

The brokers get the settings minikafka's own clusters default to where Kafka's defaults
are made for many machines: the same ZooKeeper session timeout, RF 3 (capped by the
broker count) for the internal topics, min.insync.replicas 2 for
``__transaction_state``, and a short initial rebalance delay.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..cluster import free_ports
from ..cluster.launcher import _spawn, folder_markers, log_tail
from ..cluster.launcher import proc_state as _proc_state
from ..cluster.launcher import stop_pid as _stop_pid
from ..cluster.state_files import load_state, save_state
from ..errors import ClientError
from ..polling import poll
from ..zk.launcher import find_java, wait_until_serving

HOST = "127.0.0.1"
DEFAULT_DIR = ".minikafka-reference"
STATE_FILE = "reference.json"
VERSION_LINE = "3.9"
JARS_ENV = "MINIKAFKA_KAFKA_3_9_JARS"
JAR_CACHE_ENV = "MINIKAFKA_JAR_CACHE"
JARS_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "kafka-jars.sh"
HEAP = "256m"
# Marks the java command line so that a recorded pid can be checked to still be ours.
MARKER = "-Dminikafka.role=reference-broker"
BROKER_STOP_GRACE_S = 30.0  # a controlled shutdown moves leaderships first

# minikafka's defaults where they differ from Kafka's (docs/configuration.md)
DEFAULT_CONFIGS = {
    "zookeeper.session.timeout.ms": "6000",
    "group.initial.rebalance.delay.ms": "0",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024),
}


def proc_state(pid: int | None, dir: str | os.PathLike) -> str:
    """The state of a recorded pid of the reference cluster in ``dir`` (``dead`` when
    another process took the pid over since: its command line does not name ``dir``)."""
    return _proc_state(pid, folder_markers(dir))


def stop_pid(pid: int | None, dir: str | os.PathLike, grace_s: float = 20.0) -> str:
    """SIGTERM, then SIGKILL after ``grace_s``, a process of the reference cluster in ``dir``."""
    return _stop_pid(pid, grace_s, folder_markers(dir))


@dataclass
class ReferenceBroker:
    id: int
    port: int
    pid: int | None = None
    log: str = ""
    log_dir: str = ""
    properties: str = ""


@dataclass
class ReferenceState:
    """What ``reference.json`` records: Kafka's version, its jars, ZooKeeper and the brokers."""

    dir: str
    version: str
    jars: str
    zookeeper_port: int
    zookeeper_pid: int | None = None
    zookeeper_log: str = ""
    brokers: dict[int, ReferenceBroker] = field(default_factory=dict)
    heap: str = HEAP  # each broker's -Xmx and -Xms (a restarted broker gets the same)

    @property
    def zookeeper_connect(self) -> str:
        return f"{HOST}:{self.zookeeper_port}"

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{b.port}" for b in self.brokers.values())

    def pids(self) -> list[int]:
        return [p for p in [self.zookeeper_pid, *(b.pid for b in self.brokers.values())] if p]

    def save(self) -> None:
        save_state(self, "brokers", Path(self.dir) / STATE_FILE)

    @classmethod
    def load(cls, dir: str | os.PathLike) -> "ReferenceState":
        return load_state(cls, ReferenceBroker, "brokers", Path(dir) / STATE_FILE,
                          f"no reference cluster in {dir} (start one with `minikafka reference up --dir {dir}`)")


def _version_of(jar_dir: str) -> str | None:
    found = glob.glob(os.path.join(jar_dir, f"kafka_2.13-{VERSION_LINE}.*.jar"))
    return os.path.basename(found[0])[len("kafka_2.13-"):-len(".jar")] if found else None


def find_jars(fetch: bool = True) -> str:
    """The folder of Kafka 3.9's broker jars: ``$MINIKAFKA_KAFKA_3_9_JARS``, else the cache
    that ``scripts/kafka-jars.sh 3.9`` fills, running that script (Maven Central) when the
    cache has none yet and ``fetch`` is true."""
    given = os.environ.get(JARS_ENV)
    if given:
        if _version_of(given) is None:
            raise ClientError(f"{JARS_ENV}={given} holds no kafka_2.13-{VERSION_LINE}.x jar")
        return given
    cache = os.environ.get(JAR_CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "minikafka", "jars")
    found = sorted(d for d in glob.glob(os.path.join(cache, f"{VERSION_LINE}.*"))
                   if os.path.exists(os.path.join(d, ".complete")) and _version_of(d))
    if found:
        return found[-1]
    if not fetch or not JARS_SCRIPT.exists() or shutil.which("mvn") is None:
        raise ClientError(f"Apache Kafka {VERSION_LINE}'s jars are not in {cache}: fetch them with "
                          f"scripts/kafka-jars.sh {VERSION_LINE} (needs Maven), or set {JARS_ENV}=DIR")
    done = subprocess.run(["bash", str(JARS_SCRIPT), VERSION_LINE], capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise ClientError(f"scripts/kafka-jars.sh {VERSION_LINE} failed: {done.stderr.strip()[-300:]}")
    return done.stdout.strip().splitlines()[-1]


def broker_properties(broker_id: int, port: int, log_dir: str, zookeeper_connect: str, brokers: int,
                      configs: dict[str, str]) -> str:
    """The server.properties of one reference broker."""
    settings = {
        "broker.id": str(broker_id),
        "listeners": f"PLAINTEXT://{HOST}:{port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "log.dirs": log_dir,
        "zookeeper.connect": zookeeper_connect,
        "offsets.topic.replication.factor": str(min(3, brokers)),
        "transaction.state.log.replication.factor": str(min(3, brokers)),
        "transaction.state.log.min.isr": str(min(2, brokers)),
        **DEFAULT_CONFIGS,
        **configs,
    }
    return "".join(f"{k}={v}\n" for k, v in settings.items())


def check_heap(heap: str, option: str = "--heap") -> None:
    """ClientError (naming ``option``) unless ``heap`` is a size as java's -Xmx takes it (256m, 1g)."""
    if not re.fullmatch(r"[1-9][0-9]*[kmgKMG]?", heap):
        raise ClientError(f"{option} must be a size as java -Xmx takes it (256m, 1g), not {heap!r}")


def broker_command(java: str, jars: str, properties: str, heap: str = HEAP) -> list[str]:
    """The java command line of one reference broker (small heap, its log on stdout)."""
    return [java, f"-Xmx{heap}", f"-Xms{heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true", MARKER, "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
            "-Dorg.slf4j.simpleLogger.showDateTime=true", "-cp", os.path.join(jars, "*"), "kafka.Kafka", properties]


def up(dir: str | os.PathLike = DEFAULT_DIR, brokers: int = 3, configs: dict[str, str] | None = None,
       timeout_s: float = 120.0, progress=lambda msg: None, heap: str = HEAP) -> ReferenceState:
    """Start ZooKeeper and ``brokers`` Kafka 3.9 brokers in ``dir``, each with ``heap`` as
    its -Xmx (Java's size syntax: 256m, 1g); returns once every broker is registered and a
    controller is elected."""
    if brokers < 1:
        raise ClientError(f"--brokers must be at least 1, not {brokers}")
    check_heap(heap)
    root = Path(dir)
    if (root / STATE_FILE).exists() and any(proc_state(p, root) != "dead" for p in ReferenceState.load(root).pids()):
        raise ClientError(f"a reference cluster is already running in {dir} (stop it with `minikafka reference down --dir {dir}`)")
    java = find_java()
    jars = find_jars()
    version = _version_of(jars) or VERSION_LINE
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    base = free_ports.free_port_block(brokers + 1)
    state = ReferenceState(dir=str(root), version=version, jars=jars, zookeeper_port=base,
                           zookeeper_log=str(root / "zookeeper.log"), heap=heap)
    deadline = time.monotonic() + timeout_s
    try:
        progress(f"starting ZooKeeper on {state.zookeeper_connect}")
        zk = _spawn([sys.executable, "-m", "minikafka", "zookeeper", "--port", str(base), "--data-dir",
                     str(root / "zookeeper")], state.zookeeper_log, append=False)
        state.zookeeper_pid = zk.pid
        state.save()
        wait_until_serving(state.zookeeper_connect, timeout_s=max(deadline - time.monotonic(), 1),
                           alive=lambda: zk.poll() is None)
        progress(f"starting {brokers} Kafka {version} broker{'s' if brokers != 1 else ''} on ports "
                 f"{base + 1}-{base + brokers}")
        for i in range(1, brokers + 1):
            b = ReferenceBroker(id=i, port=base + i, log=str(root / f"kafka-{i}.log"), log_dir=str(root / f"kafka-{i}"),
                                properties=str(root / f"server-{i}.properties"))
            Path(b.properties).write_text(broker_properties(i, b.port, b.log_dir, state.zookeeper_connect, brokers,
                                                            configs or {}))
            b.pid = _spawn(broker_command(java, jars, b.properties, heap), b.log, append=False).pid
            state.brokers[i] = b
            state.save()
        progress("waiting for registrations and a controller")
        wait_ready(state, deadline)
    except BaseException:
        _stop(state)
        raise
    return state


def wait_ready(state: ReferenceState, deadline: float) -> None:
    """Until every broker is in /brokers/ids and /controller exists (ClientError at ``deadline``,
    or as soon as a broker process has died)."""
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=state.zookeeper_connect, timeout=5.0)
    zk.start(timeout=10)
    ids: set[str] = set()

    def ready() -> bool:
        nonlocal ids
        for b in state.brokers.values():
            if proc_state(b.pid, state.dir) == "dead":
                raise ClientError(f"Kafka broker {b.id} exited at start-up; last lines of {b.log}: {log_tail(b.log)}")
        ids = set(zk.get_children("/brokers/ids")) if zk.exists("/brokers/ids") else set()
        return ids >= {str(i) for i in state.brokers} and bool(zk.exists("/controller"))

    try:
        if not poll(ready, deadline - time.monotonic(), 0.2):
            raise ClientError(f"the reference brokers did not all register within the timeout "
                              f"(registered: {sorted(ids)}); see {state.dir}/kafka-*.log")
    finally:
        zk.stop()
        zk.close()


def _stop(state: ReferenceState) -> dict[str, str]:
    results = {}
    for b in state.brokers.values():
        results[f"kafka-{b.id}"] = stop_pid(b.pid, state.dir, BROKER_STOP_GRACE_S)
        b.pid = None
    results["zookeeper"] = stop_pid(state.zookeeper_pid, state.dir)
    state.zookeeper_pid = None
    if Path(state.dir).exists():
        state.save()
    return results


def down(dir: str | os.PathLike = DEFAULT_DIR) -> dict[str, str]:
    """Stop the brokers (SIGTERM: Kafka's controlled shutdown), then ZooKeeper, by their pids."""
    return _stop(ReferenceState.load(dir))


def _broker(dir: str | os.PathLike, broker_id: int) -> tuple[ReferenceState, ReferenceBroker]:
    state = ReferenceState.load(dir)
    b = state.brokers.get(broker_id)
    if b is None:
        raise ClientError(f"no reference broker {broker_id} in {dir} (brokers: {sorted(state.brokers)})")
    return state, b


def kill(dir: str | os.PathLike, broker_id: int) -> None:
    """SIGKILL one reference broker (it stays recorded; :func:`start` brings it back)."""
    signal_broker(dir, broker_id, "KILL")


SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "STOP": signal.SIGSTOP, "CONT": signal.SIGCONT}


def signal_broker(dir: str | os.PathLike, broker_id: int, name: str, timeout_s: float = BROKER_STOP_GRACE_S) -> str:
    """Send one reference broker SIGKILL, SIGTERM, SIGSTOP or SIGCONT, by its recorded pid.

    KILL returns once the process is gone; TERM (Kafka's controlled shutdown) once it has
    exited, SIGKILLing it after ``timeout_s``; STOP and CONT at once.  A broker that exited
    is no longer recorded as running, and :func:`start` brings it back with its data.
    Returns ``"killed"``, ``"stopped"``, ``"paused"``, ``"resumed"`` or ``"not running"``."""
    if name not in SIGNALS:
        raise ClientError(f"unsupported signal {name!r}: use KILL, TERM, STOP or CONT")
    state, b = _broker(dir, broker_id)
    if not b.pid or proc_state(b.pid, state.dir) == "dead":
        return "not running"
    if name == "TERM":
        outcome = stop_pid(b.pid, state.dir, timeout_s)
    elif name in ("STOP", "CONT"):
        os.kill(b.pid, SIGNALS[name])
        return "paused" if name == "STOP" else "resumed"
    else:
        os.kill(b.pid, signal.SIGKILL)  # a paused process dies at once too
        pid = b.pid
        poll(lambda: proc_state(pid, state.dir) == "dead", 10, 0.05)
        outcome = "killed"
    b.pid = None
    state.save()
    return outcome


def start(dir: str | os.PathLike, broker_id: int) -> None:
    """Start a stopped or killed reference broker again, with its data."""
    state, b = _broker(dir, broker_id)
    if b.pid and proc_state(b.pid, state.dir) != "dead":
        raise ClientError(f"reference broker {broker_id} is already running (pid {b.pid})")
    b.pid = _spawn(broker_command(find_java(), state.jars, b.properties, state.heap), b.log, append=True).pid
    state.save()


def status(dir: str | os.PathLike = DEFAULT_DIR) -> dict:
    """The reference cluster's processes: ``{"version", "bootstrap", "zookeeper", "brokers"}``."""
    state = ReferenceState.load(dir)
    return {"dir": state.dir, "version": state.version, "bootstrap": state.bootstrap,
            "zookeeper": {"connect": state.zookeeper_connect, "pid": state.zookeeper_pid,
                          "state": proc_state(state.zookeeper_pid, state.dir)},
            "brokers": [{"id": b.id, "port": b.port, "pid": b.pid, "state": proc_state(b.pid, state.dir)}
                        for b in state.brokers.values()]}
