"""Run a real ZooKeeper server (java) for a local minikafka cluster.

ZooKeeper is a Java program.  minikafka finds it in one of two places:

1. the jars inside the pyspark wheel (``pip install 'minikafka[spark]'``), which
   ship ZooKeeper 3.9 with its logging and netty jars;
2. Debian's ``zookeeper`` package (``/usr/share/java/zookeeper.jar`` and the jars
   beside it).

The server is standalone (one node) or, given the ``server.N`` lines of an
ensemble, one member of a quorum; it listens on loopback only, and keeps its
snapshots and transaction logs in a data folder that also holds the ``zoo.cfg``,
``myid`` (ensemble members) and ``log4j2.xml`` this module writes.  Use ``--zookeeper HOST:PORT`` anywhere
in the CLI to use an existing ZooKeeper instead.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from ..errors import ClientError
from .errors import ZooKeeperError
from .probe import probe_client

MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
QUORUM_MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# The four-letter words a server answers: ``srvr`` and ``mntr`` tell its mode.
FOUR_LETTER_WORDS = "srvr,mntr,ruok,stat"
# Ensemble members: ticks a follower may take to connect and sync to the leader, and to
# stay in sync with it.
INIT_LIMIT_TICKS = 10
SYNC_LIMIT_TICKS = 5
DEBIAN_ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
HOW_TO_GET_ZOOKEEPER = (
    "install the spark extra (pip install 'minikafka[spark]'), "
    "or Debian's package (apt-get install zookeeper), "
    "or point minikafka at a running ZooKeeper with --zookeeper HOST:PORT"
)
# A marker on the java command line, so a recorded pid can be checked to still be ours.
PROCESS_MARKER = "-Dminikafka.role=zookeeper"

# Short ticks allow session timeouts down to 1 s (ZooKeeper's minimum is 2 ticks).
TICK_TIME_MS = 500
MIN_SESSION_TIMEOUT_MS = 1000
MAX_SESSION_TIMEOUT_MS = 60000

_LOG4J2_XML = """<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by minikafka: ZooKeeper logs warnings and errors only, to stdout
     (which the cluster launcher sends to zookeeper.log). -->
<Configuration status="WARN">
  <Appenders>
    <Console name="console" target="SYSTEM_OUT">
      <PatternLayout pattern="%d{ISO8601} %-5p [%t] %c{1}: %m%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="WARN">
      <AppenderRef ref="console"/>
    </Root>
  </Loggers>
</Configuration>
"""


DEFAULT_BIND = "127.0.0.1"  # clientPortAddress: loopback unless told otherwise


def find_java() -> str:
    """The path of the ``java`` executable: $JAVA_HOME/bin/java, else ``java`` on PATH.

    Raises :class:`ClientError` with a one-line how-to when there is none.
    """
    java_home = os.environ.get("JAVA_HOME", "").strip()
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if found:
        return found
    raise ClientError(
        "java was not found (neither $JAVA_HOME/bin/java nor java on PATH): install Java 17+ "
        "(e.g. apt-get install openjdk-17-jre-headless), or " + HOW_TO_GET_ZOOKEEPER
    )


def find_zookeeper_classpath() -> str:
    """A java classpath holding ZooKeeper and its dependencies.

    Tries the pyspark wheel's ``jars/`` folder first, then Debian's
    ``/usr/share/java``.  Raises :class:`ClientError` when neither has ZooKeeper.
    """
    try:
        spec = importlib.util.find_spec("pyspark")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            jars = Path(location) / "jars"
            if any(jars.glob("zookeeper-[0-9]*.jar")):
                return str(jars / "*")
    if DEBIAN_ZOOKEEPER_JAR.is_file():
        folder = DEBIAN_ZOOKEEPER_JAR.parent
        # zookeeper.jar first, then everything beside it (jute, slf4j, log4j, netty...).
        return os.pathsep.join([str(DEBIAN_ZOOKEEPER_JAR), str(folder / "*")])
    raise ClientError("ZooKeeper's jars were not found: " + HOW_TO_GET_ZOOKEEPER)


def parse_server(spec: str) -> tuple[int, str, int, int]:
    """``"2=127.0.0.1:2888:3888"`` -> ``(2, "127.0.0.1", 2888, 3888)``: one ``server.N``
    line of an ensemble (id, host, quorum port, leader-election port).  Raises ValueError."""
    sid, eq, rest = spec.partition("=")
    parts = rest.split(":")
    if not eq or len(parts) != 3:
        raise ValueError(f"expected ID=HOST:PEER_PORT:ELECTION_PORT, got {spec!r}")
    server_id, peer, election = int(sid), int(parts[1]), int(parts[2])
    if not 1 <= server_id <= 255 or not (0 < peer < 65536 and 0 < election < 65536):
        raise ValueError(f"bad server id or port in {spec!r}")
    return server_id, parts[0], peer, election


def write_config(port: int, data_dir: str | os.PathLike, bind: str = DEFAULT_BIND, *,
                 server_id: int | None = None, servers: list[str] | None = None) -> Path:
    """Write ``zoo.cfg`` and ``log4j2.xml`` into ``data_dir`` (created if needed); return zoo.cfg.

    ZooKeeper serves clients on ``bind``:``port`` (``clientPortAddress``; 127.0.0.1 by
    default, another address of this host to let brokers on other hosts in).  With
    ``servers`` (``"N=HOST:PEER:ELECTION"`` each, see :func:`parse_server`) the server is
    member ``server_id`` of that ensemble: zoo.cfg gets the ``server.N`` lines and
    ``data_dir``/myid holds ``server_id``."""
    folder = Path(data_dir).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    cfg = folder / "zoo.cfg"
    what = f"member {server_id} of an ensemble of {len(servers)}" if servers else "a standalone ZooKeeper"
    lines = [
        f"# Written by minikafka: {what} on {bind}.",
        f"tickTime={TICK_TIME_MS}",
        f"minSessionTimeout={MIN_SESSION_TIMEOUT_MS}",
        f"maxSessionTimeout={MAX_SESSION_TIMEOUT_MS}",
        f"dataDir={folder}",
        f"clientPort={int(port)}",
        f"clientPortAddress={bind}",
        "admin.enableServer=false",
        f"4lw.commands.whitelist={FOUR_LETTER_WORDS}",
        "maxClientCnxns=0",
    ]
    if servers:
        if server_id is None:
            raise ValueError("an ensemble member needs its server id")
        parsed = [parse_server(spec) for spec in servers]
        if server_id not in {sid for sid, *_ in parsed}:
            raise ValueError(f"server id {server_id} is not among the ensemble's servers")
        lines += [f"initLimit={INIT_LIMIT_TICKS}", f"syncLimit={SYNC_LIMIT_TICKS}"]
        lines += [f"server.{sid}={host}:{peer}:{election}" for sid, host, peer, election in parsed]
        (folder / "myid").write_text(f"{server_id}\n")
    cfg.write_text("\n".join(lines + [""]))
    (folder / "log4j2.xml").write_text(_LOG4J2_XML)
    return cfg


def zookeeper_command(port: int, data_dir: str | os.PathLike, bind: str = DEFAULT_BIND, *,
                      server_id: int | None = None, servers: list[str] | None = None) -> list[str]:
    """The argv that runs ZooKeeper on ``bind``:``port`` (default 127.0.0.1) with its data in
    ``data_dir`` (as member ``server_id`` of the ensemble ``servers`` when given, see
    :func:`write_config`).

    Writes ``zoo.cfg`` and ``log4j2.xml`` into ``data_dir`` as a side effect.
    Raises :class:`ClientError` when java or ZooKeeper's jars are missing.
    """
    java = find_java()
    classpath = find_zookeeper_classpath()
    cfg = write_config(port, data_dir, bind, server_id=server_id, servers=servers)
    folder = cfg.parent
    return [
        java,
        "-Xmx256m",
        PROCESS_MARKER,
        f"-Dzookeeper.log.dir={folder}",
        f"-Dlog4j2.configurationFile={folder / 'log4j2.xml'}",
        f"-Dlog4j.configurationFile={folder / 'log4j2.xml'}",
        "-Dzookeeper.admin.enableServer=false",
        "-Dzookeeper.jmx.log4j.disable=true",
        "-Dzookeeper.maxCnxns=10000",
        "-cp",
        classpath,
        QUORUM_MAIN_CLASS if servers else MAIN_CLASS,
        str(cfg),
    ]


def run_foreground(port: int, data_dir: str | os.PathLike, bind: str = DEFAULT_BIND, *,
                   server_id: int | None = None, servers: list[str] | None = None) -> int:
    """Run ZooKeeper in the foreground until it exits; return its exit status.

    On POSIX the current process *becomes* java (``os.execv``), so its pid is the
    server's pid and SIGTERM/SIGKILL reach ZooKeeper directly.  Elsewhere java runs
    as a child and SIGTERM/SIGINT are forwarded to it.
    """
    argv = zookeeper_command(port, data_dir, bind, server_id=server_id, servers=servers)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execv(argv[0], argv)  # does not return
    proc = subprocess.Popen(argv)  # pragma: no cover - non-POSIX path

    def forward(signum: int, _frame: object) -> None:  # pragma: no cover
        proc.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):  # pragma: no cover
        signal.signal(sig, forward)
    return proc.wait()  # pragma: no cover


def split_connect(connect: str) -> tuple[str, str]:
    """``"h1:p1,h2:p2/chroot"`` -> ``("h1:p1,h2:p2", "/chroot")`` (chroot ``""`` if none)."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, (slash + chroot).rstrip("/") if slash else ""


def is_no_node(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a client of :func:`probe_client` (or by kazoo itself),
    says that the znode does not exist."""
    from .errors import NoNodeError
    from .probe import translate

    return isinstance(translate(exc), NoNodeError)


def four_letter_word(host: str, port: int, word: str, timeout_s: float = 1.0) -> str | None:
    """Send a ZooKeeper four-letter command (``ruok``, ``srvr``, ``stat``); None if unreachable."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(word.encode())
            sock.shutdown(socket.SHUT_WR)
            chunks = []
            while True:
                data = sock.recv(4096)
                if not data:
                    break
                chunks.append(data)
        return b"".join(chunks).decode(errors="replace")
    except OSError:
        return None


def server_mode(host: str, port: int, timeout_s: float = 1.0) -> str:
    """What a ZooKeeper server says it is, from its own ``srvr`` answer: ``leader``,
    ``follower`` or ``standalone``; ``looking`` when it answers but does not serve (an
    ensemble member without a quorum, electing); ``down`` when nothing answers."""
    reply = four_letter_word(host, port, "srvr", timeout_s)
    if reply is None or not reply.strip():
        return "down"
    for line in reply.splitlines():
        if line.startswith("Mode:"):
            return line.partition(":")[2].strip() or "looking"
    return "looking"


def _host_ports(hosts: str) -> list[tuple[str, int]]:
    out = []
    for item in hosts.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host:
            host, port = item.strip(), "2181"
        try:
            out.append((host.strip("[]"), int(port)))
        except ValueError:
            raise ClientError(f"bad ZooKeeper address {item!r}: expected HOST:PORT") from None
    return out


def _may_be_serving(hosts: str) -> bool:
    """True when some server answers ``srvr`` as serving (or does not allow ``srvr``).

    Asking ``srvr`` first keeps ZooKeeper's log free of the stack trace it writes
    when a client session arrives before the server is ready.
    """
    for host, port in _host_ports(hosts):
        reply = four_letter_word(host, port, "srvr")
        if reply is None or "not currently serving" in reply:
            continue
        return True
    return False


def wait_until_serving(connect: str, timeout_s: float = 30.0, alive: Callable[[], bool] | None = None) -> None:
    """Block until the ZooKeeper at ``connect`` accepts a session.

    ``alive`` (optional) is polled between attempts; when it returns False (the
    server process died) waiting stops early.  Raises :class:`TimeoutError`
    naming the address when ZooKeeper does not answer in ``timeout_s`` seconds.
    """
    hosts, _chroot = split_connect(connect)
    deadline = time.monotonic() + timeout_s
    while True:
        if alive is not None and not alive():
            raise TimeoutError(f"ZooKeeper at {hosts} exited before it started serving")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        if not _may_be_serving(hosts):
            time.sleep(min(0.1, remaining))
            continue
        try:
            client = probe_client(hosts, timeout_s=min(2.0, max(remaining, 0.1)))
        except ZooKeeperError:  # no answer in time, refused connections
            continue
        try:
            client.get_children("/")
            return
        except ZooKeeperError:
            time.sleep(0.1)
        finally:
            client.close()
    raise TimeoutError(f"ZooKeeper at {hosts} did not start serving within {timeout_s:g} s")
