"""minikafka.cluster.free_ports: ports outside the ephemeral range, bind-checked, never
handed out twice, and an error naming the ranges searched; the launcher's defaults."""
from __future__ import annotations

import random
import socket

import pytest

from minikafka.cluster import free_ports, launcher
from minikafka.cluster.launcher import default_kafka_base_port

LINUX = (32768, 60999)


def test_the_ranges_searched_are_outside_the_ephemeral_range():
    assert free_ports.search_ranges(LINUX) == [(10000, 32767), (61000, 65535)]
    assert free_ports.search_ranges((1024, 65535)) == []
    assert free_ports.search_ranges((5000, 40000)) == [(40001, 65535)]
    assert free_ports.describe([(10000, 32767), (61000, 65535)]) == "10000-32767 and 61000-65535"
    assert free_ports.in_ephemeral_range(40000, LINUX) and not free_ports.in_ephemeral_range(29092, LINUX)


def test_the_range_is_read_from_the_kernel_file(tmp_path):
    f = tmp_path / "ip_local_port_range"
    f.write_text("20000\t50000\n")
    assert free_ports.ephemeral_range(str(f)) == (20000, 50000)
    assert free_ports.ephemeral_range(str(tmp_path / "missing")) == free_ports.LINUX_DEFAULT_RANGE


def test_ports_handed_out_are_free_outside_the_range_and_never_twice():
    eph = free_ports.ephemeral_range()
    seen: set[int] = set()
    for count in (1, 3, 7):
        for _ in range(5):
            base = free_ports.free_port_block(count)
            block = set(range(base, base + count))
            assert not any(free_ports.in_ephemeral_range(p, eph) for p in block), (base, eph)
            assert all(free_ports.FIRST_PORT <= p <= 65535 for p in block)
            assert not block & seen
            assert all(free_ports.port_free(p) for p in block)
            seen |= block


def _held_port() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s


def test_a_port_in_use_is_passed_over_and_the_error_names_the_ranges():
    with _held_port() as held:
        port = held.getsockname()[1]
        assert not free_ports.port_free(port)
        with pytest.raises(free_ports.NoFreePorts, match=f"no free port on 127.0.0.1: searched {port}$"):
            free_ports.free_port_block(1, ranges=[(port, port)])
        with pytest.raises(free_ports.NoFreePorts, match="no block of 2 consecutive free ports"):
            free_ports.free_port_block(2, ranges=[(port, port + 1)])


def test_a_port_in_avoid_is_passed_over():
    with _held_port() as held:  # a port no other test in this run is handed
        port = held.getsockname()[1]
    with pytest.raises(free_ports.NoFreePorts):
        free_ports.free_port_block(1, avoid=(port,), ranges=[(port, port)])


def test_the_default_error_says_which_ephemeral_range_it_avoided(monkeypatch):
    monkeypatch.setattr(free_ports, "ephemeral_range", lambda path=free_ports.RANGE_FILE: (1024, 65535))
    with pytest.raises(free_ports.NoFreePorts) as err:
        free_ports.free_port_block(3, rng=random.Random(1))
    message = str(err.value)
    assert "no block of 3 consecutive free ports" in message and "searched no port at all" in message
    assert "outside the ephemeral range 1024-65535 of /proc/sys/net/ipv4/ip_local_port_range" in message


def test_cluster_up_defaults_keep_kafka_listeners_out_of_the_ephemeral_range():
    assert default_kafka_base_port(9092, 3, LINUX) == 29092  # the documented default
    assert default_kafka_base_port(40000, 3, LINUX) == 20000  # 60000-60002 would be ephemeral
    assert default_kafka_base_port(50000, 3, LINUX) == 30000  # 70000 passes 65535
    assert default_kafka_base_port(15000, 3, LINUX) == 35000  # no choice: 15000 - 20000 is no port
    assert free_ports.ephemeral_warning([2181, 9092, 9093, 29092], LINUX) is None
    warning = free_ports.ephemeral_warning([2181, 40000, 40001], LINUX)
    assert warning is not None and warning.startswith("ports 40000, 40001 are in this machine's ephemeral range "
                                                      "32768-60999")
    assert "choose ports in 10000-32767 and 61000-65535" in warning


def test_cluster_up_warns_when_it_would_listen_in_the_ephemeral_range(monkeypatch, tmp_path):
    """The warning comes before anything starts (here it aborts ``up`` right there)."""
    zk, base, kafka = free_ports.free_port(), free_ports.free_port(), free_ports.free_port()
    monkeypatch.setattr(free_ports, "ephemeral_range", lambda path=free_ports.RANGE_FILE: (1024, 65535))

    class Warned(Exception):
        pass

    def on_warning(message: str) -> None:
        raise Warned(message)

    with pytest.raises(Warned) as warned:
        launcher.up(tmp_path / "c", brokers=1, zookeeper_port=zk, base_port=base, kafka_base_port=kafka,
                    on_warning=on_warning)
    assert str(warned.value).startswith(f"ports {', '.join(map(str, sorted((zk, base, kafka))))} are in this "
                                        "machine's ephemeral range 1024-65535")
    assert not (tmp_path / "c").exists()
