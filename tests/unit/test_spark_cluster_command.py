"""minikafka.spark.standalone and `minikafka spark-cluster` without starting anything: the
command lines and environment of the master and workers, how registrations are read from
the master's JSON, where the driver binds, and the CLI's one-line errors.  The processes
themselves run in tests/process/test_spark_standalone.py."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from minikafka.cli.main import main
from minikafka.spark import driver_address
from minikafka.spark import standalone
from minikafka.spark.standalone import SparkClusterState, SparkWorker


def state(tmp_path: Path) -> SparkClusterState:
    s = SparkClusterState(dir=str(tmp_path), spark_home=standalone.spark_home(), master_port=20000,
                          master_ui_port=20001, cores=1, memory="512m")
    s.workers = {1: SparkWorker(1, 20002, 20003), 2: SparkWorker(2, 20004, 20005)}
    return s


def test_master_and_workers_bind_to_loopback_on_the_recorded_ports(tmp_path):
    s = state(tmp_path)
    master = standalone.master_command(s)
    assert Path(master[0]).name == "spark-class" and Path(master[0]).is_file()
    assert master[1:] == ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "20000",
                          "--webui-port", "20001"]
    worker = standalone.worker_command(s, s.workers[2])
    assert worker[1:] == ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--port", "20004",
                          "--webui-port", "20005", "--cores", "1", "--memory", "512m",
                          "--work-dir", str(tmp_path / "work-2"), "spark://127.0.0.1:20000"]
    assert s.master_url == "spark://127.0.0.1:20000"


def test_executors_run_this_python_with_this_minikafka_importable(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = standalone.daemon_env(state(tmp_path), "worker")
    assert env["PYSPARK_PYTHON"] == sys.executable
    first, *rest = env["PYTHONPATH"].split(os.pathsep)
    assert (Path(first) / "minikafka" / "spark" / "standalone.py").resolve() == Path(standalone.__file__).resolve()
    assert rest == ["/elsewhere"]
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert env["SPARK_LOCAL_DIRS"].startswith(str(tmp_path)), "executors' scratch space stays in the folder"
    assert "minikafka.role=spark-worker" in env["SPARK_DAEMON_JAVA_OPTS"]


def test_registered_workers_are_read_from_the_masters_json(tmp_path):
    s = state(tmp_path)
    answer = {"workers": [{"port": 20002, "state": "ALIVE"}, {"port": 20004, "state": "DEAD"},
                          {"port": 31000, "state": "ALIVE"}]}  # a worker of another master's run
    assert standalone.registered(s, answer) == [1]
    answer["workers"][1]["state"] = "ALIVE"
    assert standalone.registered(s, answer) == [1, 2]


def test_the_state_file_round_trips(tmp_path):
    s = state(tmp_path)
    s.master_pid, s.workers[1].pid = 111, 222
    s.save()
    back = SparkClusterState.load(tmp_path)
    assert back == s and back.pids() == [111, 222]


def test_a_pid_that_runs_no_spark_daemon_is_not_ours():
    # a recycled pid is never stopped: this Python is not a Spark master or worker
    assert standalone.proc_state(os.getpid()) == "dead"
    assert standalone.stop_pid(os.getpid()) == "not running"


@pytest.mark.parametrize("master, loopback", [
    ("local[2]", True), ("local", True), ("spark://127.0.0.1:7077", True), ("spark://localhost:7077", True),
    ("spark://127.0.0.1:7077,127.0.0.1:7078", True), ("spark://spark-master:7077", False),
    ("spark://127.0.0.1:7077,10.0.0.2:7077", False), ("yarn", False), ("k8s://https://10.0.0.1:6443", False),
])
def test_the_driver_binds_to_loopback_only_when_every_executor_is_on_this_machine(master, loopback):
    expected = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"} if loopback else {}
    assert driver_address(master) == expected


@pytest.mark.parametrize("args, message", [
    (["status"], "no Spark cluster in"),
    (["down"], "no Spark cluster in"),
    (["up", "--memory", "lots"], "expected a size such as 512m or 1g"),
    (["up", "--workers", "0"], "expected a whole number of at least 1"),
])
def test_cli_mistakes_are_one_line_and_exit_2(tmp_path, capsys, args, message):
    code = main(["spark-cluster", *args, "--dir", str(tmp_path / "none")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("minikafka: error: ") and message in err
    assert not (tmp_path / "none").exists(), "nothing was started or written"
