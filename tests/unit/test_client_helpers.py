"""The clients' small helpers: value conversion, acks and bootstrap parsing."""
from __future__ import annotations


import pytest

from minikafka import errors
from minikafka.client.connection import parse_bootstrap
from minikafka.client.producer import normalize_acks, normalize_headers, to_bytes


# ---------------------------------------------------------------- small helpers

def test_value_conversion():
    assert to_bytes("hé", "value") == "hé".encode()
    assert to_bytes(bytearray(b"x"), "value") == b"x"
    assert to_bytes(None, "value") is None
    with pytest.raises(TypeError, match="value must be bytes"):
        to_bytes(5, "value")
    assert normalize_headers({"a": "1", "b": None}) == [("a", b"1"), ("b", None)]
    with pytest.raises(TypeError):
        normalize_headers([(1, b"x")])


def test_acks_and_bootstrap_parsing():
    assert [normalize_acks(a) for a in ("all", -1, "1", 0)] == [-1, -1, 1, 0]
    with pytest.raises(errors.ClientError):
        normalize_acks(2)
    assert parse_bootstrap("h1:1, h2:2") == [("h1", 1), ("h2", 2)]
    assert parse_bootstrap(["[::1]:9092", ("h", 3)]) == [("::1", 9092), ("h", 3)]
    for bad in ("", "nohost", "h:x", "h:70000"):
        with pytest.raises(errors.ClientError):
            parse_bootstrap(bad)
