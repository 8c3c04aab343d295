"""Fixtures of the unit tests: ``broker``, the client tests' in-process fake broker
(client_fake_broker.py), started for a test and stopped after it."""
from __future__ import annotations

import pytest

from client_fake_broker import FakeBroker


@pytest.fixture
def broker():
    b = FakeBroker().start()
    yield b
    b.stop()
