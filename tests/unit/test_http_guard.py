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


# -- the Host check (DNS rebinding) ----------------------------------------------------------
def _config(**kwargs):
    from minikafka.config import BrokerConfig

    return BrokerConfig(1, "zk:2181", **kwargs)


def test_the_allowed_hosts_are_the_brokers_own_names_and_the_configured_ones():
    from minikafka.broker.http_guard import HostAllowList

    hosts = HostAllowList.of(_config(
        listen_host="0.0.0.0", listen_port=19092, advertised_host="broker-1", external_listen_port=9092,
        external_advertised_host="localhost", kafka_listen_port=39092, kafka_external_listen_port=29092,
        kafka_external_advertised_host="kafka.example", settings={"minikafka.http.allowed.hosts": "LB.example, 10.0.0.5"}))
    assert hosts.names == {"localhost", "127.0.0.1", "::1", "broker-1", "kafka.example", "lb.example", "10.0.0.5"}
    for host in ("broker-1:19092", "BROKER-1", "localhost:9092", "localhost.", "127.0.0.1", "[::1]:9092",
                 "lb.example:443", "10.0.0.5:9092", None, ""):
        assert hosts.allows(host), host
    for host in ("attacker.example", "attacker.example:9092", "broker-1.attacker.example", "127.0.0.1.nip.io",
                 "0.0.0.0:9092", "[::2]:9092", "[bad"):
        assert not hosts.allows(host), host


def test_a_listener_host_is_a_name_and_the_machines_name_is_not_unless_it_is_one():
    import socket

    from minikafka.broker.http_guard import HostAllowList

    hosts = HostAllowList.of(_config(listen_host="broker-a.internal", listen_port=9092))
    assert hosts.allows("broker-a.internal:9092")
    name = socket.gethostname().lower()
    assert name in ("broker-a.internal", "localhost") or not hosts.allows(name)


def test_a_star_allows_any_host():
    from minikafka.broker.http_guard import HostAllowList

    hosts = HostAllowList.of(_config(settings={"minikafka.http.allowed.hosts": "*"}))
    assert hosts.allows("attacker.example")


def test_a_bad_allowed_hosts_value_is_invalid_config():
    from minikafka.errors import InvalidConfigError

    with pytest.raises(InvalidConfigError, match="minikafka.http.allowed.hosts"):
        _config(settings={"minikafka.http.allowed.hosts": "http://a.example/"})


@pytest.mark.parametrize("method, path", [("POST", "/v1/delete_topics"), ("GET", "/api/state"), ("GET", "/metrics"),
                                          ("GET", "/")])
def test_a_request_for_another_host_is_421_whatever_its_origin_says(method, path):
    from minikafka.broker.http_guard import HostAllowList

    hosts = HostAllowList.of(_config())
    # DNS rebinding: the page's origin and the request's Host agree, both the attacker's name
    headers = {"Host": "attacker.example:9092", "Origin": "http://attacker.example:9092"}
    answer = refusal(method, path, headers, "attacker.example:9092", "http", "application/msgpack", hosts)
    assert answer is not None and answer.status == 421
    assert "INVALID_REQUEST" in answer.text and "'attacker.example:9092'" in answer.text
    assert "minikafka.http.allowed.hosts" in answer.text
    ok = {"Host": "127.0.0.1:9092", "Origin": "http://127.0.0.1:9092"}
    assert refusal(method, path, ok, "127.0.0.1:9092", "http", "application/msgpack", hosts) is None
