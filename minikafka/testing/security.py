"""Security settings of a test cluster's Kafka listener: SASL/PLAIN users, TLS, or both,
and the client settings that reach it.

A test cluster (:func:`minikafka.testing.start_cluster`, the plugin's
``minikafka_cluster``) secures the Kafka-protocol listener, the one a Kafka application
under test connects to, with the protocol given (Kafka's names: ``PLAINTEXT``, ``SSL``,
``SASL_PLAINTEXT``, ``SASL_SSL``).  The msgpack listener stays ``PLAINTEXT``: it is the
harness's own channel (its admin, waits, healing and checker reads), as an inter-broker
listener often stays in a Kafka deployment.  With an authorizer among the broker
settings, the first user and the harness (``User:ANONYMOUS`` on the msgpack listener)
are super users unless ``super.users`` is given.

:meth:`Security.librdkafka`, :meth:`Security.kafka_python` and
:meth:`Security.java_properties` give each client's own spelling of the same settings
(the cluster's ``kafka_client_config()`` and friends add the bootstrap servers).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ClientError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_USERS = {"admin": "admin-secret", "alice": "alice-secret"}
ANONYMOUS = "User:ANONYMOUS"


@dataclass(frozen=True)
class Security:
    """The Kafka listener's security protocol and, for SASL, its users (name -> password;
    the first is the default user of the client settings)."""

    protocol: str = "PLAINTEXT"
    users: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_USERS))
    ca: str | None = None  # the CA's PEM file, once :meth:`prepare` made the certificates

    def __post_init__(self) -> None:
        protocol = self.protocol.upper()
        if protocol not in PROTOCOLS:
            raise ClientError(f"security must be one of {', '.join(PROTOCOLS)}, got {self.protocol!r}")
        object.__setattr__(self, "protocol", protocol)
        if self.sasl and not self.users:
            raise ClientError(f"security {protocol} needs at least one user (name=password)")
        for name in self.users:
            if not name or "=" in name or any(c.isspace() for c in name):
                raise ClientError(f"a SASL user name must have no '=' or spaces, got {name!r}")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def key(self) -> tuple:
        """What makes two clusters' security the same (the plugin's pool shares those)."""
        return (self.protocol, tuple(sorted(self.users.items())) if self.sasl else ())

    # -- the brokers' side -------------------------------------------------------------------
    def prepare(self, dir: str, broker_configs: dict[str, str]) -> tuple["Security", dict[str, str]]:
        """Write what the brokers need into ``dir`` (the users file, the certificates) and
        return this security with its CA known, and the broker settings to add."""
        if self.protocol == "PLAINTEXT":
            return self, {}
        os.makedirs(dir, mode=0o700, exist_ok=True)
        configs = {"listener.security.protocol.map": f"INTERNAL:PLAINTEXT,KAFKA:{self.protocol}"}
        if self.sasl:
            users = Path(dir) / "sasl-users.properties"
            fd = os.open(users, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write("# NAME=PASSWORD: the Kafka listener's SASL/PLAIN users\n")
                f.writelines(f"{u}={p}\n" for u, p in self.users.items())
            configs["sasl.users.file"] = str(users)
        ca = None
        if self.tls:
            from .tls import make_certs

            certs = make_certs(Path(dir) / "certs", clients=())
            configs["ssl.keystore.location"] = certs.broker_keystore
            ca = certs.ca
        if broker_configs.get("authorizer.class.name") and "super.users" not in broker_configs:
            supers = [ANONYMOUS] + ([f"User:{next(iter(self.users))}"] if self.sasl else [])
            configs["super.users"] = ";".join(supers)
        return Security(self.protocol, dict(self.users), ca), configs

    # -- the clients' side -------------------------------------------------------------------
    def _user(self, user: str | None) -> tuple[str, str]:
        name = user or next(iter(self.users))
        if name not in self.users:
            raise ClientError(f"no SASL user {name!r} in this cluster (users: {', '.join(self.users)})")
        return name, self.users[name]

    def librdkafka(self, user: str | None = None) -> dict[str, str]:
        """confluent-kafka's and kcat's settings (``security.protocol``, ``sasl.*``,
        ``ssl.ca.location``)."""
        out = {"security.protocol": self.protocol}
        if self.sasl:
            name, password = self._user(user)
            out.update({"sasl.mechanisms": "PLAIN", "sasl.username": name, "sasl.password": password})
        if self.tls and self.ca:
            out["ssl.ca.location"] = self.ca
        return out

    def kafka_python(self, user: str | None = None) -> dict[str, str]:
        """kafka-python's and aiokafka's keyword arguments (aiokafka takes an
        ``ssl_context`` where kafka-python takes ``ssl_cafile``)."""
        out = {"security_protocol": self.protocol}
        if self.sasl:
            name, password = self._user(user)
            out.update({"sasl_mechanism": "PLAIN", "sasl_plain_username": name, "sasl_plain_password": password})
        if self.tls and self.ca:
            out["ssl_cafile"] = self.ca
        return out

    def java_properties(self, user: str | None = None) -> str:
        """A Java client's properties (Kafka's ``--command-config`` files too)."""
        lines = [f"security.protocol={self.protocol}"]
        if self.sasl:
            name, password = self._user(user)
            lines += ["sasl.mechanism=PLAIN",
                      "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                      f'username="{name}" password="{password}";']
        if self.tls and self.ca:
            lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={self.ca}"]
        return "\n".join(lines) + "\n"


def parse_users(pairs: dict[str, str] | None) -> dict[str, str]:
    """Users from ``name=password`` settings (the plugin's ``sasl_users``); none: the defaults."""
    return dict(pairs) if pairs else dict(DEFAULT_USERS)
