"""The broker setting sasl.jaas.config: Kafka's PLAIN login module entry, whose user_NAME
entries are users as sasl.users.file's lines are; a password, never shown in an error."""
from __future__ import annotations

import pytest

from minikafka.auth.users import parse_jaas_users
from minikafka.config import BrokerConfig
from minikafka.errors import InvalidConfigError

MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


def test_the_user_entries_are_the_users():
    text = f'{MODULE} required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="a\\"b;c";'
    assert parse_jaas_users(text) == {"admin": "admin-secret", "alice": 'a"b;c'}
    assert parse_jaas_users(f"  {MODULE} optional;  ") == {}


@pytest.mark.parametrize("text, why", [
    ('com.example.OtherLoginModule required user_a="b";', "expected org.apache.kafka.common.security.plain"),
    (f'{MODULE} user_a="b";', "flag must follow it"),
    (f'{MODULE} required user_a="b"', "must end with ';'"),
    (f'{MODULE} required user_a=secret-b;', 'expected key="value" options'),
    (f'{MODULE} required user_="b";', "needs a name and a password"),
])
def test_a_malformed_entry_is_invalid_config_without_its_passwords(text, why):
    with pytest.raises(InvalidConfigError, match=why):
        parse_jaas_users(text)
    with pytest.raises(InvalidConfigError) as exc:
        BrokerConfig(1, "zk", settings={"sasl.jaas.config": text})
    assert "sasl.jaas.config" in exc.value.message and "secret" not in exc.value.message and '"b"' not in exc.value.message


def test_a_broker_takes_it_and_its_users_log_in(tmp_path):
    from minikafka.broker.metrics import Metrics
    from minikafka.broker.security import Security

    users = tmp_path / "users.properties"
    users.write_text("bob=bob-secret\nalice=old\n")
    config = BrokerConfig(1, "zk", settings={
        "listener.security.protocol.map": "KAFKA:SASL_PLAINTEXT", "sasl.users.file": str(users),
        "sasl.jaas.config": f'{MODULE} required user_alice="alice-secret";'})
    security = Security(config, Metrics())
    assert security.plain(b"\x00alice\x00alice-secret") == "User:alice"
    assert security.plain(b"\x00bob\x00bob-secret") == "User:bob"
    # on its own, without a users file, it is enough for a SASL listener
    Security(BrokerConfig(1, "zk", settings={"listener.security.protocol.map": "KAFKA:SASL_PLAINTEXT",
                                             "sasl.jaas.config": f'{MODULE} required user_alice="x";'}), Metrics())
