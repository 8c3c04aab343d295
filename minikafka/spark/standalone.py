"""A Spark standalone cluster on this machine: one master and N workers, from the PySpark install.

``minikafka spark-cluster up`` starts ``org.apache.spark.deploy.master.Master`` and N
``org.apache.spark.deploy.worker.Worker`` processes with PySpark's own ``bin/spark-class``
(no separate Spark download), all bound to 127.0.0.1 on free ports chosen at run time
(master, master web UI, each worker and its web UI), and waits until every worker is
registered with the master (the master's ``/json/``).  ``spark-cluster.json`` in the
folder records the pids and ports; ``spark-cluster down`` stops exactly those pids
(a worker kills its executors when it stops).

A driver then connects with ``master=spark://127.0.0.1:PORT`` (the status prints it).
Executors run in their own JVMs under the workers, and their Python workers run the
``minikafka`` format's reader and writer code: the Python data source classes travel
pickled by reference, so ``minikafka`` (and its dependencies) must be importable by the
Python the executors start.  Here that is this interpreter (the workers get
``PYSPARK_PYTHON`` = ``sys.executable``) with the folder that holds the imported
``minikafka`` package first on ``PYTHONPATH`` (so a source checkout runs its own code);
on a real cluster, install ``minikafka[spark]`` into the workers' Python, or ship the
package with ``spark.submit.pyFiles`` (docs/spark.md).
"""
from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..cluster import free_ports, launcher
from ..cluster.launcher import _spawn, log_tail
from ..cluster.state import process_state
from ..cluster.state_files import load_state, save_state
from ..errors import ClientError
from ..zk.launcher import find_java

HOST = "127.0.0.1"
DEFAULT_DIR = ".minikafka-spark"
STATE_FILE = "spark-cluster.json"
DAEMON_MEMORY = "256m"  # heap of the master and worker JVMs (executors get spark.executor.memory)
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
STOP_GRACE_S = 20.0


SPARK_DAEMONS = (MASTER_CLASS.encode(), WORKER_CLASS.encode())  # in a master's or worker's command line


def proc_state(pid: int | None) -> str:
    """``running`` / ``stopped`` / ``dead`` for a recorded master or worker pid (a recycled
    pid, one that runs no Spark master or worker, counts as dead)."""
    return launcher.proc_state(pid, SPARK_DAEMONS)


def stop_pid(pid: int | None, grace_s: float = STOP_GRACE_S) -> str:
    """SIGTERM a master or worker, SIGKILL it after ``grace_s``: ``not running``,
    ``stopped`` or ``killed``."""
    return launcher.stop_pid(pid, grace_s, SPARK_DAEMONS)


@dataclass
class SparkWorker:
    id: int
    port: int
    ui_port: int
    pid: int | None = None
    log: str = ""


@dataclass
class SparkClusterState:
    """What ``spark-cluster.json`` records: the master and the workers."""

    dir: str
    spark_home: str
    master_port: int
    master_ui_port: int
    master_pid: int | None = None
    master_log: str = ""
    cores: int = 1
    memory: str = "1g"
    workers: dict[int, SparkWorker] = field(default_factory=dict)

    @property
    def master_url(self) -> str:
        """What a driver gives as ``master``: ``spark://127.0.0.1:PORT``."""
        return f"spark://{HOST}:{self.master_port}"

    @property
    def master_ui(self) -> str:
        return f"http://{HOST}:{self.master_ui_port}"

    def pids(self) -> list[int]:
        return [p for p in [self.master_pid, *(w.pid for w in self.workers.values())] if p]

    def save(self) -> None:
        save_state(self, "workers", Path(self.dir) / STATE_FILE)

    @classmethod
    def load(cls, dir: str | os.PathLike) -> "SparkClusterState":
        return load_state(cls, SparkWorker, "workers", Path(dir) / STATE_FILE,
                          f"no Spark cluster in {dir} (start one with `minikafka spark-cluster up --dir {dir}`)")


def spark_home() -> str:
    """The folder of the installed ``pyspark`` package, which holds ``bin/spark-class`` and ``jars/``."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.origin:
        raise ClientError("PySpark is not installed: pip install 'minikafka[spark]'")
    home = Path(spec.origin).parent
    if not (home / "bin" / "spark-class").is_file() or not (home / "jars").is_dir():
        raise ClientError(f"the PySpark install in {home} has no bin/spark-class or jars/")
    return str(home)


def package_root() -> str:
    """The folder that holds the ``minikafka`` package this process imported."""
    return str(Path(__file__).resolve().parents[2])


def daemon_env(state: SparkClusterState, role: str) -> dict[str, str]:
    """The environment of the master or a worker: Spark's home, loopback, small heaps,
    and, for executors started by a worker, this Python with this ``minikafka`` importable."""
    pythonpath = os.pathsep.join(p for p in (package_root(), os.environ.get("PYTHONPATH", "")) if p)
    return {
        "SPARK_HOME": state.spark_home,
        "SPARK_LOCAL_IP": HOST,
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        # marks the java command line, so that a recorded pid can be checked to still be ours
        "SPARK_DAEMON_JAVA_OPTS": f"-Dminikafka.role=spark-{role}",
        "SPARK_LOCAL_DIRS": str(Path(state.dir) / "local"),
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": pythonpath,
    }


def master_command(state: SparkClusterState) -> list[str]:
    return [str(Path(state.spark_home) / "bin" / "spark-class"), MASTER_CLASS, "--host", HOST,
            "--port", str(state.master_port), "--webui-port", str(state.master_ui_port)]


def worker_command(state: SparkClusterState, w: SparkWorker) -> list[str]:
    return [str(Path(state.spark_home) / "bin" / "spark-class"), WORKER_CLASS, "--host", HOST,
            "--port", str(w.port), "--webui-port", str(w.ui_port), "--cores", str(state.cores),
            "--memory", state.memory, "--work-dir", str(Path(state.dir) / f"work-{w.id}"), state.master_url]


def _spawn_with(argv: list[str], log: str, env: dict[str, str]) -> int:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # _spawn passes this process's environment on
    try:
        return _spawn(argv, log, append=False).pid
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def up(dir: str | os.PathLike = DEFAULT_DIR, workers: int = 2, cores: int = 1, memory: str = "1g",
       timeout_s: float = 120.0, progress: Callable[[str], None] = lambda msg: None,
       wait_workers: bool = True) -> SparkClusterState:
    """Start a master and ``workers`` workers (``cores`` cores and ``memory`` each) in ``dir``
    (emptied first); returns once every worker is registered with the master, or with
    ``wait_workers=False`` once the master is ALIVE (a driver may then start while the
    workers register: its executors come when they have)."""
    if workers < 1:
        raise ClientError(f"--workers must be at least 1, not {workers}")
    if cores < 1:
        raise ClientError(f"--cores must be at least 1, not {cores}")
    root = Path(dir)
    if (root / STATE_FILE).exists() and any(proc_state(p) != "dead" for p in SparkClusterState.load(root).pids()):
        raise ClientError(f"a Spark cluster is already running in {dir} "
                          f"(stop it with `minikafka spark-cluster down --dir {dir}`)")
    find_java()
    home = spark_home()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    base = free_ports.free_port_block(2 + 2 * workers)
    state = SparkClusterState(dir=str(root), spark_home=home, master_port=base, master_ui_port=base + 1,
                              master_log=str(root / "master.log"), cores=cores, memory=memory)
    deadline = time.monotonic() + timeout_s
    try:
        progress(f"starting the Spark master on {state.master_url} (web UI {state.master_ui})")
        state.master_pid = _spawn_with(master_command(state), state.master_log, daemon_env(state, "master"))
        state.save()
        for i in range(1, workers + 1):
            w = SparkWorker(id=i, port=base + 2 * i, ui_port=base + 2 * i + 1, log=str(root / f"worker-{i}.log"))
            state.workers[i] = w
            w.pid = _spawn_with(worker_command(state, w), w.log, daemon_env(state, "worker"))
            state.save()
        progress(f"waiting for {workers} worker{'s' if workers != 1 else ''} to register" if wait_workers
                 else "waiting for the master")
        wait_registered(state, deadline, workers if wait_workers else 0)
    except BaseException:
        _stop(state)
        raise
    return state


def master_json(state: SparkClusterState, timeout_s: float = 2.0) -> dict | None:
    """The master's ``/json/`` (workers, applications), or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"{state.master_ui}/json/", timeout=timeout_s) as resp:
            return json.loads(resp.read().decode())
    except (OSError, urllib.error.URLError, ValueError):
        return None


def worker_json(state: SparkClusterState, worker_id: int, timeout_s: float = 2.0) -> dict | None:
    """A worker's ``/json/`` (its executors), or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://{HOST}:{state.workers[worker_id].ui_port}/json/", timeout=timeout_s) as resp:
            return json.loads(resp.read().decode())
    except (OSError, urllib.error.URLError, ValueError):
        return None


def registered(state: SparkClusterState, answer: dict | None = None) -> list[int]:
    """The ids of our workers the master lists as ALIVE."""
    answer = answer if answer is not None else master_json(state)
    ports = {w.port: w.id for w in state.workers.values()}
    return sorted(ports[w["port"]] for w in (answer or {}).get("workers", ())
                  if w.get("state") == "ALIVE" and w.get("port") in ports)


def wait_registered(state: SparkClusterState, deadline: float, workers: int | None = None) -> None:
    """Until the master is ALIVE and lists ``workers`` (default: every one) of our workers as
    ALIVE (ClientError at ``deadline``, or as soon as one of the processes has exited)."""
    want = len(state.workers) if workers is None else workers
    while True:
        for name, pid, log in [("master", state.master_pid, state.master_log),
                               *((f"worker {w.id}", w.pid, w.log) for w in state.workers.values())]:
            # the process itself, not its command line: a daemon just started is ours, and while
            # spark-class runs Spark's launcher and execs the JVM its command line is in flux
            if process_state(pid) == "dead":
                raise ClientError(f"the Spark {name} exited at start-up; last lines of {log}: {log_tail(log)}")
        answer = master_json(state)
        alive = registered(state, answer) if answer else []
        if answer and answer.get("status") == "ALIVE" and len(alive) >= want:
            return
        if time.monotonic() > deadline:
            raise ClientError(f"the Spark master did not list {want} ALIVE workers within the timeout "
                              f"(registered: {alive}); see {state.dir}/*.log")
        time.sleep(0.3)


def _stop(state: SparkClusterState) -> dict[str, str]:
    """SIGTERM every worker at once (each kills its executors), then the master."""
    results: dict[str, str] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(state.workers))) as pool:
        stops = {w.id: pool.submit(stop_pid, w.pid, STOP_GRACE_S) for w in state.workers.values()}
        for wid, fut in stops.items():
            results[f"worker-{wid}"] = fut.result()
            state.workers[wid].pid = None
    results["master"] = stop_pid(state.master_pid, STOP_GRACE_S)
    state.master_pid = None
    if Path(state.dir).exists():
        state.save()
    return results


def down(dir: str | os.PathLike = DEFAULT_DIR) -> dict[str, str]:
    """Stop the workers (SIGTERM: each kills its executors first), then the master, by their pids."""
    return _stop(SparkClusterState.load(dir))


def status(dir: str | os.PathLike = DEFAULT_DIR) -> dict[str, Any]:
    """The master URL, each process's pid and state, and what the master reports: which
    workers are registered and the running applications."""
    state = SparkClusterState.load(dir)
    answer = master_json(state) if proc_state(state.master_pid) != "dead" else None
    alive = set(registered(state, answer)) if answer else set()
    return {"dir": state.dir, "master_url": state.master_url, "web_ui": state.master_ui,
            "master": {"pid": state.master_pid, "state": proc_state(state.master_pid), "answers": answer is not None},
            "workers": [{"id": w.id, "port": w.port, "web_ui": f"http://{HOST}:{w.ui_port}", "pid": w.pid,
                         "state": proc_state(w.pid), "registered": w.id in alive, "cores": state.cores,
                         "memory": state.memory} for w in state.workers.values()],
            "applications": [{"id": a.get("id"), "name": a.get("name"), "cores": a.get("cores"),
                              "state": a.get("state")} for a in (answer or {}).get("activeapps", ())]}
