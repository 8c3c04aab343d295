"""The zoo.cfg and myid of an ensemble member, the parsing of its server lines, and the
launcher's refusals of a bad ensemble (nothing started)."""
from __future__ import annotations

import pytest

from minikafka.cli.main import main
from minikafka.cluster import launcher
from minikafka.errors import ClientError
from minikafka.zk.launcher import parse_server, write_config

SERVERS = ["1=127.0.0.1:2888:3888", "2=127.0.0.1:2889:3889", "3=127.0.0.1:2890:3890"]


def test_an_ensemble_member_gets_every_server_line_and_its_myid(tmp_path):
    cfg = write_config(2182, tmp_path / "zk-2", server_id=2, servers=SERVERS).read_text()
    assert "server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889\nserver.3=127.0.0.1:2890:3890" in cfg
    assert "clientPort=2182" in cfg and "initLimit=" in cfg and "syncLimit=" in cfg
    assert "4lw.commands.whitelist=srvr,mntr,ruok" in cfg
    assert (tmp_path / "zk-2" / "myid").read_text().strip() == "2"
    standalone = write_config(2181, tmp_path / "zk").read_text()
    assert "server." not in standalone and not (tmp_path / "zk" / "myid").exists()


def test_bad_server_lines_are_refused():
    assert parse_server("3=127.0.0.1:2890:3890") == (3, "127.0.0.1", 2890, 3890)
    for bad in ("3=127.0.0.1:2890", "x=127.0.0.1:1:2", "0=h:1:2", "1=h:1:70000", "127.0.0.1:1:2"):
        with pytest.raises(ValueError):
            parse_server(bad)
    with pytest.raises(ValueError):
        write_config(2181, "/nonexistent-unused", server_id=4, servers=SERVERS)


def test_the_zookeeper_command_refuses_a_bad_ensemble_in_one_line(capsys, tmp_path):
    assert main(["zookeeper", "--data-dir", str(tmp_path), "--server-id", "4",
                 *[a for s in SERVERS for a in ("--server", s)]]) == 2
    assert main(["zookeeper", "--data-dir", str(tmp_path), "--server-id", "1"]) == 2
    assert main(["zookeeper", "--data-dir", str(tmp_path), "--server-id", "1", "--server", "1=h:1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("minikafka: error: --server") for line in err), err
    assert not (tmp_path / "zoo.cfg").exists()


def test_cluster_up_refuses_a_bad_ensemble_before_starting_anything(tmp_path):
    for kwargs, words in (({"zookeeper_nodes": 0}, "at least 1"),
                          ({"zookeeper_nodes": 3, "zookeeper": "127.0.0.1:2181"}, "cannot be used with --zookeeper"),
                          ({"zookeeper_chroot": "kafka"}, "ZooKeeper path"),
                          ({"zookeeper_chroot": "/k", "zookeeper": "127.0.0.1:2181"}, "at the end of --zookeeper")):
        with pytest.raises(ClientError, match=words):
            launcher.up(str(tmp_path / "c"), **kwargs)
    assert not (tmp_path / "c").exists()
