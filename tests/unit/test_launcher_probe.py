"""The launcher's start-up probe (cluster up and cluster start wait with it): ready when
the check says nothing is awaited, a broker that exits fails at once with the cause from
its log, a timeout names what was awaited last, and a ZooKeeper reader that lost its
session is replaced."""
from __future__ import annotations

import time

import pytest

from minikafka.cluster import launcher
from minikafka.errors import ClientError


class FakeProc:
    def __init__(self, code: int | None = None) -> None:
        self.code = code

    def poll(self) -> int | None:
        return self.code


class FakeReader:
    connected = True
    opened: list["FakeReader"] = []

    def __init__(self, connect: str, timeout_s: float = 0) -> None:
        self.ok = FakeReader.connected
        self.closed = False
        FakeReader.opened.append(self)

    def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def fake_reader(monkeypatch):
    FakeReader.connected = True
    FakeReader.opened = []
    monkeypatch.setattr(launcher, "_ZkReader", FakeReader)


def test_ready_once_nothing_is_awaited_and_the_reader_is_closed():
    answers = iter(["registration of broker(s) 2", "a controller to be elected", None])
    launcher._probe_until("zk:1", lambda reader: next(answers), time.monotonic() + 10, {}, lambda waiting: waiting)
    assert len(FakeReader.opened) == 1 and FakeReader.opened[0].closed


def test_a_timeout_names_what_was_awaited_last():
    with pytest.raises(ClientError, match="^still waiting for a controller to be elected$"):
        launcher._probe_until("zk:1", lambda reader: "a controller to be elected", time.monotonic() + 0.3, {},
                              lambda waiting: f"still waiting for {waiting}")
    assert all(reader.closed for reader in FakeReader.opened)


def test_without_a_zookeeper_session_it_waits_for_zookeeper_with_a_new_reader_each_round():
    FakeReader.connected = False
    with pytest.raises(ClientError, match="^ZooKeeper$"):
        launcher._probe_until("zk:1", lambda reader: pytest.fail("not asked without a session"),
                              time.monotonic() + 0.5, {}, lambda waiting: waiting)
    assert len(FakeReader.opened) >= 2 and all(reader.closed for reader in FakeReader.opened)


def test_a_broker_that_exits_fails_at_once_with_the_cause_from_its_log(tmp_path):
    log = tmp_path / "broker-2.log"
    log.write_text("starting\nminikafka: error: cannot listen on 127.0.0.1:9093: address already in use\n")
    started = time.monotonic()
    with pytest.raises(ClientError, match="^broker 2 cannot start: cannot listen on 127.0.0.1:9093"):
        launcher._probe_until("zk:1", lambda reader: "registration of broker(s) 2", time.monotonic() + 30,
                              {1: (FakeProc(), None), 2: (FakeProc(2), str(log))}, lambda waiting: waiting)
    assert time.monotonic() - started < 5
