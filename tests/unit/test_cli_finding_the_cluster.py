"""Client commands that find the cluster through --dir say at once, in one line, where they
looked and why there is nothing to talk to."""
from __future__ import annotations

import os

from minikafka.cli.main import main
from minikafka.cluster.state import BrokerState, ClusterState, ZooKeeperState, save


def _record(dir: str, zookeeper_pid: int | None) -> None:
    save(ClusterState(zookeeper=ZooKeeperState(connect="127.0.0.1:1", port=1, pid=zookeeper_pid), dir=dir,
                      brokers={1: BrokerState(id=1, host="127.0.0.1", port=1, pid=None),
                               2: BrokerState(id=2, host="127.0.0.1", port=2, pid=None)}))


def _error(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2  # from the recorded pids: no client is made, nothing waits
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("minikafka: error: "), err
    return err.strip()


def test_no_cluster_names_the_absolute_folder_and_dir(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = _error(capsys, "topics", "list")
    assert f"no cluster in {tmp_path}/.minikafka (no cluster.json there)" in err
    assert "--dir DIR" in err and "--bootstrap-server" in err
    assert f"no cluster in {tmp_path}/elsewhere" in _error(capsys, "cluster", "status", "--dir", "elsewhere")


def test_a_cluster_that_is_down_is_named_down(tmp_path, capsys):
    dir = str(tmp_path / "c")
    _record(dir, zookeeper_pid=None)
    err = _error(capsys, "topics", "list", "--dir", dir)
    assert err == f"minikafka: error: the cluster in {dir} is down: start it with `minikafka cluster up --dir {dir}`"
    _record(dir, zookeeper_pid=os.getpid())  # ZooKeeper runs, no broker does
    err = _error(capsys, "produce", "t", "--dir", dir)
    assert f"no broker of the cluster in {dir} is running (all 2 stopped or killed)" in err
    assert f"`minikafka cluster start ID --dir {dir}` (IDs 1 2)" in err
