"""The ACL decision and the user rules, without processes (Kafka's AclAuthorizer)."""
from __future__ import annotations

import base64
import json

import pytest

from minikafka import errors
from minikafka.auth import acls, users
from minikafka.auth.acls import AclBinding, AclFilter, Authorizer


def rule(rtype, name, principal, op, permission="Allow", host="*", pattern="LITERAL"):
    return AclBinding.make(rtype, name, principal, op, permission, host, pattern)


def authorizer(*bindings, super_users=(), allow_if_no_acl=False):
    a = Authorizer(super_users, allow_if_no_acl)
    a.replace(bindings)
    return a


def test_an_allow_names_principal_operation_and_resource():
    a = authorizer(rule("Topic", "orders", "User:alice", "Write"))
    assert a.authorize("User:alice", "10.0.0.1", "Write", "Topic", "orders")
    assert not a.authorize("User:bob", "10.0.0.1", "Write", "Topic", "orders")
    assert not a.authorize("User:alice", "10.0.0.1", "Read", "Topic", "orders")
    assert not a.authorize("User:alice", "10.0.0.1", "Write", "Topic", "orders-2")


def test_implied_operations_as_in_kafka():
    a = authorizer(rule("Topic", "t", "User:a", "Read"), rule("Topic", "t", "User:b", "AlterConfigs"),
                   rule("Topic", "t", "User:c", "All"))
    assert a.authorize("User:a", "h", "Describe", "Topic", "t")  # Read implies Describe
    assert not a.authorize("User:a", "h", "Write", "Topic", "t")
    assert a.authorize("User:b", "h", "DescribeConfigs", "Topic", "t")
    assert not a.authorize("User:b", "h", "Describe", "Topic", "t")
    assert all(a.authorize("User:c", "h", op, "Topic", "t") for op in ("Read", "Write", "Delete", "Describe"))


def test_deny_wins_and_wildcards_and_prefixes_match():
    a = authorizer(rule("Topic", "*", "User:*", "Read"), rule("Topic", "secret", "User:bob", "Read", "Deny"),
                   rule("Topic", "logs-", "User:carol", "Write", pattern="PREFIXED"),
                   rule("Topic", "t", "User:dave", "Read", host="10.0.0.9"))
    assert a.authorize("User:bob", "h", "Read", "Topic", "anything")
    assert not a.authorize("User:bob", "h", "Read", "Topic", "secret")
    assert a.authorize("User:alice", "h", "Read", "Topic", "secret")
    assert a.authorize("User:carol", "h", "Write", "Topic", "logs-eu")
    assert not a.authorize("User:carol", "h", "Write", "Topic", "log")
    assert a.authorize("User:dave", "10.0.0.9", "Read", "Topic", "t")
    assert not a.authorize("User:dave", "10.0.0.8", "Write", "Topic", "t")


def test_super_users_and_resources_without_acls():
    a = authorizer(rule("Topic", "t", "User:a", "Read"), super_users={"User:root"})
    assert a.authorize("User:root", "h", "Delete", "Cluster", "kafka-cluster")
    assert not a.authorize("User:a", "h", "Read", "Topic", "unnamed")
    open_ = authorizer(rule("Topic", "t", "User:a", "Read"), allow_if_no_acl=True)
    assert open_.authorize("User:x", "h", "Write", "Topic", "unnamed")
    assert not open_.authorize("User:x", "h", "Read", "Topic", "t")  # named by a rule: the rule decides
    assert acls.parse_super_users("User:admin; User:ops") == {"User:admin", "User:ops"}


@pytest.mark.parametrize("args,match", [
    (("Table", "t", "User:a", "Read"), "resource type"),
    (("Topic", "t", "alice", "Read"), "principal"),
    (("Topic", "t", "User:a", "Fly"), "operation"),
    (("Topic", "t", "User:a", "Read", "Maybe"), "permission"),
    (("Cluster", "c", "User:a", "Alter"), "kafka-cluster"),
    (("Topic", "", "User:a", "Read"), "resource name"),
])
def test_bad_words_are_invalid_request(args, match):
    with pytest.raises(errors.InvalidRequestError, match=match):
        AclBinding.make(*args)


def test_words_are_taken_in_any_case_as_kafka_acls_prints_them():
    b = AclBinding.make("TOPIC", "t", "User:a", "describe_configs", "ALLOW", pattern_type="prefixed")
    assert (b.resource_type, b.operation, b.permission, b.pattern_type) == ("Topic", "DescribeConfigs", "Allow", "PREFIXED")
    assert b.describe() == ("(principal=User:a, host=*, operation=DESCRIBECONFIGS, permissionType=ALLOW) "
                            "on Topic:PREFIXED:t")


def test_znode_layout_is_kafka_2x():
    b = [rule("Topic", "t", "User:a", "Read"), rule("Topic", "t", "User:b", "Write", "Deny", "10.0.0.1")]
    data = acls.acls_to_znode(b)
    assert json.loads(data) == {"version": 1, "acls": [
        {"principal": "User:a", "permissionType": "Allow", "operation": "Read", "host": "*"},
        {"principal": "User:b", "permissionType": "Deny", "operation": "Write", "host": "10.0.0.1"}]}
    assert acls.acls_from_znode("Topic", "t", "LITERAL", data) == sorted(b)
    assert acls.znode_path("Topic", "t", "LITERAL") == "/kafka-acl/Topic/t"
    assert acls.znode_path("Group", "g", "PREFIXED") == "/kafka-acl-extended/prefixed/Group/g"
    assert acls.change_notification("Topic", "t", "LITERAL") == b"Topic:t"
    assert json.loads(acls.change_notification("Topic", "t", "PREFIXED"))["patternType"] == "PREFIXED"
    # damaged data is read as no rules, and a bad entry is skipped
    assert acls.acls_from_znode("Topic", "t", "LITERAL", b"{not json") == []
    assert acls.acls_from_znode("Topic", "t", "LITERAL", b'{"acls":[{"principal":"bob"}]}') == []


def test_filters_match_fields_and_match_patterns():
    lit, wild, pre = (rule("Topic", "logs-eu", "User:a", "Read"), rule("Topic", "*", "User:b", "Read"),
                      rule("Topic", "logs-", "User:c", "Read", pattern="PREFIXED"))
    every = [lit, wild, pre]
    assert [b for b in every if AclFilter().matches(b)] == every
    assert [b for b in every if AclFilter(resource_name="logs-eu").matches(b)] == [lit]
    assert [b for b in every if AclFilter(resource_name="logs-eu", pattern_type="Match").matches(b)] == every
    assert [b for b in every if AclFilter(pattern_type="PREFIXED").matches(b)] == [pre]
    assert [b for b in every if AclFilter(principal="User:b").matches(b)] == [wild]


def test_users_file_and_sasl_plain_tokens():
    u = users.Users(users.parse_users("# users\nalice=alice-secret\n\nbob = b=c\n"))
    assert u.check("alice", "alice-secret") == "User:alice"
    assert u.check("bob", " b=c") == "User:bob"  # the password is everything after the first '='
    for name, password in (("alice", "wrong"), ("mallory", "x")):
        with pytest.raises(errors.SaslAuthenticationFailedError, match="Invalid username or password"):
            u.check(name, password)
    with pytest.raises(errors.InvalidConfigError, match="line 2"):
        users.parse_users("alice=x\nno-password-here\n")
    assert users.parse_plain(b"\x00alice\x00pw") == ("alice", "pw")
    assert users.parse_plain(b"alice\x00alice\x00pw") == ("alice", "pw")
    for bad in (b"alice\x00pw", b"bob\x00alice\x00pw", b"\x00\x00pw", b"\x00\xff\x00pw"):
        with pytest.raises(errors.SaslAuthenticationFailedError):
            users.parse_plain(bad)
    assert users.parse_basic(users.basic_header("alice", "p:w")) == ("alice", "p:w")
    for bad in ("Bearer x", "Basic !!!", "Basic " + base64.b64encode(b"nocolon").decode()):
        with pytest.raises(errors.SaslAuthenticationFailedError):
            users.parse_basic(bad)


def test_a_certificate_subject_is_a_principal_most_specific_part_first():
    cert = {"subject": ((("organizationName", "minikafka-tests"),), (("commonName", "carol"),))}
    assert users.cert_principal(cert) == "User:CN=carol,O=minikafka-tests"
    assert users.cert_principal({}) is None and users.cert_principal(None) is None


@pytest.mark.parametrize("settings,match", [
    ({"listener.security.protocol.map": "KAFKA:SASL_PLAINTEXT"}, "sasl.users.file"),
    ({"listener.security.protocol.map": "KAFKA:SSL"}, "ssl.keystore.location"),
    ({"listener.security.protocol.map": "INTERNAL:SSL", "ssl.keystore.location": "/x"}, "INTERNAL"),
    ({"ssl.client.auth": "required"}, "ssl.truststore.location"),
    ({"sasl.users.file": "/nonexistent/users", "listener.security.protocol.map": "KAFKA:SASL_PLAINTEXT"},
     "cannot read sasl.users.file"),
    ({"listener.security.protocol.map": "KAFKA:TLS"}, "LISTENER:PROTOCOL"),
    ({"authorizer.class.name": "com.example.Mine"}, "AclAuthorizer"),
    ({"sasl.enabled.mechanisms": "SCRAM-SHA-256"}, "only PLAIN"),
    ({"super.users": "admin"}, "User:NAME"),
    ({"listener.security.protocol.map": "KAFKA:SSL", "ssl.keystore.location": "/nonexistent/k.pem"},
     "ssl.keystore.location /nonexistent/k.pem: no such file"),
    ({"listener.security.protocol.map": "KAFKA:SSL", "ssl.keystore.location": __file__},
     "not a PEM private key and certificate"),
])
def test_security_settings_are_checked_at_start(settings, match):
    from minikafka.broker.metrics import Metrics
    from minikafka.broker.security import Security
    from minikafka.config import BrokerConfig

    with pytest.raises(errors.InvalidConfigError, match=match):
        Security(BrokerConfig(1, "zk:2181", settings=settings), Metrics())


def test_command_config_takes_kafka_and_librdkafka_names():
    from minikafka.cli import command_config

    opts, ignored = command_config.parse(
        "# Kafka's client.properties\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
        'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
        'password="p w";\nssl.truststore.location=/ca.pem\nssl.endpoint.identification.algorithm=\n'
        "client.id=x\n")
    assert opts == {"security_protocol": "SASL_SSL", "sasl_plain_username": "alice", "sasl_plain_password": "p w",
                    "ssl_cafile": "/ca.pem", "ssl_check_hostname": False}
    assert ignored == ["client.id"]
    opts, _ = command_config.parse("security.protocol: SSL\nssl.ca.location=/ca\nssl.certificate.location=/c\n"
                                   "ssl.key.location=/k\n")
    assert opts == {"security_protocol": "SSL", "ssl_cafile": "/ca", "ssl_certfile": "/c", "ssl_keyfile": "/k"}
    with pytest.raises(errors.ClientError, match="PLAIN only"):
        command_config.parse("sasl.mechanism=SCRAM-SHA-512\n")
    with pytest.raises(errors.ClientError, match="key=value"):
        command_config.parse("just words\n")
