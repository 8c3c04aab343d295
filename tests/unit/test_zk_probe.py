"""zk/probe.py: the blocking client for short reads raises the adapter's errors, never
kazoo's, so the launcher and the harness above zk/ need not know kazoo."""
from __future__ import annotations

import pytest
from kazoo import exceptions as kz

from minikafka.zk.errors import NoNodeError, ZooKeeperUnavailableError
from minikafka.zk.launcher import is_no_node
from minikafka.zk.probe import ProbeClient, probe_client


class _Kazoo:
    connected = True

    def __init__(self, exc: BaseException | None = None) -> None:
        self.exc, self.stopped, self.closed = exc, False, False

    def get(self, path):  # noqa: ANN001
        if self.exc:
            raise self.exc
        return b"data", "stat"

    def stop(self) -> None:
        self.stopped = True

    def close(self) -> None:
        self.closed = True


def test_reads_pass_through_and_kazoo_errors_become_the_adapters():
    assert ProbeClient(_Kazoo()).get("/x") == (b"data", "stat")
    with pytest.raises(NoNodeError) as missing:
        ProbeClient(_Kazoo(kz.NoNodeError())).get("/x")
    assert is_no_node(missing.value) and "NoNodeError" in str(missing.value)
    with pytest.raises(ZooKeeperUnavailableError):
        ProbeClient(_Kazoo(kz.ConnectionLoss())).get("/x")
    inner = _Kazoo()
    ProbeClient(inner).close()
    assert inner.stopped and inner.closed


def test_no_zookeeper_answering_is_the_adapters_unavailable_error():
    from minikafka.cluster.free_ports import free_port

    with pytest.raises(ZooKeeperUnavailableError):
        probe_client(f"127.0.0.1:{free_port()}", timeout_s=0.5)
