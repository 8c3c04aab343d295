"""listeners / advertised.listeners / inter.broker.listener.name: parsing and Kafka's rules."""
from __future__ import annotations

import pytest

from minikafka.config import BrokerConfig, broker_setting
from minikafka.errors import InvalidConfigError
from minikafka.listener_spec import format_endpoints, parse_endpoints, resolve

FOUR = ("INTERNAL://0.0.0.0:19092,EXTERNAL://0.0.0.0:9092,KAFKA://0.0.0.0:29092,KAFKA_EXTERNAL://0.0.0.0:9093")
NO_FLAGS: dict = {}


def settings(**kw: str) -> dict:
    """Checked settings, as the CLI hands them to resolve (keys with dots: listeners, advertised_listeners)."""
    return {k.replace("_", "."): broker_setting(k.replace("_", "."), v) for k, v in kw.items()}


def test_listeners_parse_in_the_fixed_order_with_ipv6_hosts():
    eps = parse_endpoints("kafka://[::1]:29092, INTERNAL://h1:19092")
    assert eps == {"KAFKA": ("::1", 29092), "INTERNAL": ("h1", 19092)}
    assert format_endpoints(eps) == "INTERNAL://h1:19092,KAFKA://[::1]:29092"
    assert broker_setting("listeners", FOUR) == FOUR
    assert broker_setting("listeners", "") is None


@pytest.mark.parametrize("text, words", [
    ("INTERNAL:/h:1", "NAME://HOST:PORT"),
    ("INTERNAL://h", "NAME://HOST:PORT"),
    ("INTERNAL://h:70000", "NAME://HOST:PORT"),
    ("PLAINTEXT://h:1", "unknown listener name 'PLAINTEXT'"),
    ("CLIENT://h:1", "unknown listener name 'CLIENT'"),
    ("INTERNAL://h:1,INTERNAL://h:2", "INTERNAL is given twice"),
    ("INTERNAL://h:1,KAFKA://other:1", "port 1 is given twice (INTERNAL and KAFKA)"),
])
def test_bad_listeners_are_refused_naming_the_rule(text, words):
    for name in ("listeners", "advertised.listeners"):
        with pytest.raises(InvalidConfigError, match=f"for {name}") as e:
            broker_setting(name, text)
        assert words in e.value.message


@pytest.mark.parametrize("host", ["0.0.0.0", "", "[::]"])
def test_advertised_listeners_refuse_a_wildcard_host(host):
    with pytest.raises(InvalidConfigError, match="no other host can connect to"):
        broker_setting("advertised.listeners", f"INTERNAL://{host}:19092")


def test_inter_broker_listener_must_be_the_msgpack_internal_one():
    assert broker_setting("inter.broker.listener.name", "internal") == "INTERNAL"
    assert BrokerConfig(broker_id=1, zookeeper_connect="z").get("inter.broker.listener.name") == "INTERNAL"
    for name, words in (("KAFKA", "Kafka's binary protocol"), ("KAFKA_EXTERNAL", "Kafka's binary protocol"),
                        ("EXTERNAL", "optional listener for clients outside"), ("PLAINTEXT", "unknown listener")):
        with pytest.raises(InvalidConfigError, match="the inter-broker listener must be INTERNAL") as e:
            broker_setting("inter.broker.listener.name", name)
        assert words in e.value.message


def test_advertised_listeners_default_to_listeners_with_the_host_name_for_wildcards():
    out = resolve(settings(listeners="INTERNAL://10.1.0.5:19092,EXTERNAL://:9092,KAFKA://0.0.0.0:29092"),
                  NO_FLAGS, "broker-1.example")
    assert out == {"INTERNAL": (("10.1.0.5", 19092), ("10.1.0.5", 19092)),
                   "EXTERNAL": (("", 9092), ("broker-1.example", 9092)),
                   "KAFKA": (("0.0.0.0", 29092), ("broker-1.example", 29092))}


def test_advertised_listeners_override_per_listener():
    out = resolve(settings(listeners=FOUR, advertised_listeners="INTERNAL://10.1.0.5:19092,KAFKA_EXTERNAL://pub:9093"),
                  NO_FLAGS, "h")
    assert out["INTERNAL"][1] == ("10.1.0.5", 19092)
    assert out["KAFKA_EXTERNAL"][1] == ("pub", 9093)
    assert out["EXTERNAL"][1] == ("h", 9092)  # left out: the listeners address, wildcard -> host name


def test_advertised_listeners_must_be_a_subset_of_listeners():
    with pytest.raises(InvalidConfigError, match="--kafka-advertise k:2 needs the KAFKA listener"):
        resolve({}, {"INTERNAL": (("h", 1), None), "KAFKA": (None, ("k", 2))}, "h")
    with pytest.raises(InvalidConfigError, match="advertised.listeners must be a subset of listeners"):
        resolve(settings(listeners="INTERNAL://h:1", advertised_listeners="KAFKA://h:2"), NO_FLAGS, "h")


def test_an_internal_listener_is_required():
    with pytest.raises(InvalidConfigError, match="needs an INTERNAL listener"):
        resolve(settings(listeners="KAFKA://h:2"), NO_FLAGS, "h")
    with pytest.raises(InvalidConfigError, match="needs an INTERNAL listener"):
        resolve({}, NO_FLAGS, "h")


def test_flags_alone_resolve_as_before():
    out = resolve({}, {"INTERNAL": (("127.0.0.1", 9092), None), "KAFKA": (("0.0.0.0", 9093), ("k", 9093))}, "h")
    assert out == {"INTERNAL": (("127.0.0.1", 9092), None), "KAFKA": (("0.0.0.0", 9093), ("k", 9093))}


def test_a_flag_binding_every_interface_advertises_the_host_name_never_the_wildcard():
    out = resolve({}, {"INTERNAL": (("0.0.0.0", 9092), None), "EXTERNAL": (("", 9094), None),
                       "KAFKA": (("0.0.0.0", 9093), None)}, "h")
    # KAFKA's default is the INTERNAL listener's advertised host (BrokerConfig.advertised_kafka)
    assert out == {"INTERNAL": (("0.0.0.0", 9092), ("h", 9092)), "EXTERNAL": (("", 9094), ("h", 9094)),
                   "KAFKA": (("0.0.0.0", 9093), None)}


def test_flags_that_say_the_same_as_the_settings_are_accepted_and_fill_in_the_rest():
    out = resolve(settings(listeners="INTERNAL://0.0.0.0:19092,KAFKA://0.0.0.0:29092"),
                  {"INTERNAL": (("0.0.0.0", 19092), ("10.0.0.1", 19092)), "KAFKA": (None, ("10.0.0.1", 29092))}, "h")
    assert out == {"INTERNAL": (("0.0.0.0", 19092), ("10.0.0.1", 19092)),
                   "KAFKA": (("0.0.0.0", 29092), ("10.0.0.1", 29092))}
    # listeners unset: the flags give the listeners, advertised.listeners the addresses
    out = resolve(settings(advertised_listeners="INTERNAL://10.0.0.1:19092"),
                  {"INTERNAL": (("0.0.0.0", 19092), None)}, "h")
    assert out == {"INTERNAL": (("0.0.0.0", 19092), ("10.0.0.1", 19092))}


@pytest.mark.parametrize("flags, words", [
    ({"INTERNAL": (("127.0.0.1", 19092), None)}, "--listen 127.0.0.1:19092 disagrees with listeners' "
                                                 "INTERNAL://0.0.0.0:19092"),
    ({"EXTERNAL": (("0.0.0.0", 9092), None)}, "--listen-external 0.0.0.0:9092 is the EXTERNAL listener, which "
                                              "listeners"),
    ({"INTERNAL": (None, ("other", 19092))}, "--advertise other:19092 disagrees with advertised.listeners' "
                                             "INTERNAL://10.0.0.1:19092"),
])
def test_flags_that_disagree_with_the_settings_are_refused(flags, words):
    with pytest.raises(InvalidConfigError) as e:
        resolve(settings(listeners="INTERNAL://0.0.0.0:19092", advertised_listeners="INTERNAL://10.0.0.1:19092"),
                flags, "h")
    assert words in e.value.message


def test_broker_config_lists_the_resolved_endpoints():
    cfg = BrokerConfig(broker_id=1, zookeeper_connect="z", listen_host="0.0.0.0", listen_port=19092,
                       advertised_host="b1", kafka_listen_host="0.0.0.0", kafka_listen_port=29092)
    assert cfg.listener_endpoints() == {"INTERNAL": (("0.0.0.0", 19092), ("b1", 19092)),
                                        "KAFKA": (("0.0.0.0", 29092), ("b1", 29092))}
