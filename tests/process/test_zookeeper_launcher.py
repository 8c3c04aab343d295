"""The ZooKeeper launcher: a real server on a free port, and clear errors without java."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from kazoo.client import KazooClient

from minikafka.errors import ClientError
from minikafka.zk import launcher
from process_helpers import free_port, wait_for


def test_zookeeper_command_writes_config(tmp_path):
    argv = launcher.zookeeper_command(2999, tmp_path / "zk")
    cfg = (tmp_path / "zk" / "zoo.cfg").read_text().splitlines()
    assert "clientPort=2999" in cfg
    assert "clientPortAddress=127.0.0.1" in cfg
    assert "tickTime=500" in cfg and "minSessionTimeout=1000" in cfg
    assert "admin.enableServer=false" in cfg
    assert (tmp_path / "zk" / "log4j2.xml").is_file()
    assert argv[-2] == launcher.MAIN_CLASS and argv[-1].endswith("zoo.cfg")
    assert "-Xmx256m" in argv


def test_zookeeper_binds_another_address_when_told(tmp_path):
    launcher.zookeeper_command(2999, tmp_path / "zk", bind="10.77.0.1")
    cfg = (tmp_path / "zk" / "zoo.cfg").read_text().splitlines()
    assert "clientPortAddress=10.77.0.1" in cfg and "clientPortAddress=127.0.0.1" not in cfg


@pytest.mark.process
def test_cli_runs_a_real_zookeeper_and_stops_on_sigterm(tmp_path):
    port = free_port()
    log = open(tmp_path / "zookeeper.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "minikafka", "zookeeper", "--port", str(port), "--data-dir", str(tmp_path / "zk")],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    log.close()
    try:
        launcher.wait_until_serving(f"127.0.0.1:{port}", 60, alive=lambda: proc.poll() is None)
        assert launcher.four_letter_word("127.0.0.1", port, "ruok") == "imok"
        client = KazooClient(hosts=f"127.0.0.1:{port}", timeout=5)
        client.start(timeout=10)
        try:
            client.create("/minikafka-test", b"hello")
            data, stat = client.get("/minikafka-test")
            assert data == b"hello" and stat.version == 0
        finally:
            client.stop()
            client.close()
        # The CLI execs java, so the pid we started is ZooKeeper itself.
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
        wait_for(lambda: launcher.four_letter_word("127.0.0.1", port, "ruok") is None, 10,
                 message="ZooKeeper to stop answering")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.process
def test_session_zookeeper_fixture(zookeeper):
    client = KazooClient(hosts=zookeeper.connect, timeout=5)
    client.start(timeout=10)
    try:
        client.ensure_path("/fixture/check")
        assert client.exists("/fixture/check")
    finally:
        client.stop()
        client.close()


def test_wait_until_serving_times_out_with_the_address():
    port = free_port()
    with pytest.raises(TimeoutError, match=f"127.0.0.1:{port}"):
        launcher.wait_until_serving(f"127.0.0.1:{port}", timeout_s=0.5)


def test_missing_java_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("JAVA_HOME", "")
    with pytest.raises(ClientError) as info:
        launcher.zookeeper_command(2181, tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert "java" in message
    assert "pip install 'minikafka[spark]'" in message
    assert "apt-get install zookeeper" in message
    assert "--zookeeper HOST:PORT" in message


def test_missing_jars_says_how_to_get_them(monkeypatch, tmp_path):
    monkeypatch.setattr(launcher.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(launcher, "DEBIAN_ZOOKEEPER_JAR", tmp_path / "nope" / "zookeeper.jar")
    with pytest.raises(ClientError, match=r"pip install 'minikafka\[spark\]'"):
        launcher.find_zookeeper_classpath()


def test_split_connect():
    assert launcher.split_connect("a:1,b:2/kafka") == ("a:1,b:2", "/kafka")
    assert launcher.split_connect("a:1") == ("a:1", "")
