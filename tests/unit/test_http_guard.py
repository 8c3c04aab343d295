"""The cross-site checks of the brokers' HTTP listeners (minikafka/broker/http_guard.py):
which Origins are another site, and which requests are refused before they are read."""
from __future__ import annotations

import pytest

from minikafka.broker.http_guard import foreign_origin, refusal


@pytest.mark.parametrize("origin, host, scheme, foreign", [
    ("http://127.0.0.1:9092", "127.0.0.1:9092", "http", False),
    ("http://LOCALHOST:9092", "localhost:9092", "http", False),
    ("http://broker-1", "broker-1:80", "http", False),
    ("https://broker-1", "broker-1", "https", False),
    ("http://[::1]:9092", "[::1]:9092", "http", False),
    ("http://127.0.0.1:9093", "127.0.0.1:9092", "http", True),   # another broker's page: another site
    ("http://localhost:9092", "127.0.0.1:9092", "http", True),
    ("http://evil.example", "127.0.0.1:9092", "http", True),
    ("null", "127.0.0.1:9092", "http", True),
    ("file://", "127.0.0.1:9092", "http", True),
    ("http://127.0.0.1:notaport", "127.0.0.1:9092", "http", True),
    ("", "127.0.0.1:9092", "http", True),
])
def test_foreign_origin(origin, host, scheme, foreign):
    assert foreign_origin(origin, host, scheme) is foreign


def test_safe_methods_pass_whatever_they_carry():
    for method in ("GET", "HEAD", "OPTIONS"):
        assert refusal(method, "/api/state", {"Origin": "http://evil.example"}, "127.0.0.1:9092", "http",
                       "text/plain") is None


def test_a_body_of_another_type_is_415_and_a_foreign_origin_403():
    msgpack = "application/msgpack"
    assert refusal("POST", "/v1/produce", {}, "127.0.0.1:9092", "http", msgpack) is None
    assert refusal("POST", "/v1/produce", {}, "127.0.0.1:9092", "http", "application/x-msgpack") is None
    assert refusal("POST", "/v1/produce", {"Origin": "http://127.0.0.1:9092"}, "127.0.0.1:9092", "http",
                   msgpack) is None
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data", "application/json", ""):
        answer = refusal("POST", "/v1/delete_topics", {}, "127.0.0.1:9092", "http", ctype)
        assert answer is not None and answer.status == 415
        assert answer.text.startswith("INVALID_REQUEST: POST /v1/delete_topics takes a msgpack map with "
                                      "Content-Type: application/msgpack, not ")
    answer = refusal("PUT", "/v1/delete_topics", {"Origin": "http://evil.example"}, "127.0.0.1:9092", "http", msgpack)
    assert answer is not None and answer.status == 403
    assert "refused a cross-site request" in answer.text and "'http://evil.example'" in answer.text
