"""MINIKAFKA_EVENT_LOOP chooses a broker's event loop: asyncio's (the default) or uvloop's."""
from __future__ import annotations

import asyncio

import pytest

from minikafka.broker.main import _loop_factory


def test_asyncio_is_the_default(monkeypatch):
    monkeypatch.delenv("MINIKAFKA_EVENT_LOOP", raising=False)
    assert _loop_factory() is None


def test_uvloop_runs_a_coroutine_when_chosen(monkeypatch):
    import uvloop

    monkeypatch.setenv("MINIKAFKA_EVENT_LOOP", "uvloop")
    factory = _loop_factory()
    assert factory is uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        assert runner.run(asyncio.sleep(0, result="ran")) == "ran"
        assert isinstance(runner.get_loop(), uvloop.Loop)


def test_an_unknown_loop_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("MINIKAFKA_EVENT_LOOP", "trio")
    with pytest.raises(SystemExit, match="must be asyncio or uvloop, got 'trio'"):
        _loop_factory()
