"""One broker's security: who is calling (authentication) and whether they may (ACLs).

* **Listeners.** ``listener.security.protocol.map`` gives each listener (INTERNAL,
  EXTERNAL, KAFKA, KAFKA_EXTERNAL) a protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or
  SASL_SSL.  SSL listeners serve TLS with ``ssl.keystore.location`` (PEM);
  :meth:`Security.server_ssl` builds their context.  The INTERNAL listener, which brokers
  use to reach each other, stays without TLS (PLAINTEXT or SASL_PLAINTEXT).
* **Principals.** A listener finds out who sent a request and puts it on the request's
  :class:`~minikafka.broker.apis.context.RequestContext` (``principal`` and
  ``client_host``), which it hands to the request layer's handler: ``User:NAME`` after
  SASL/PLAIN (Kafka listener) or a Basic ``Authorization`` header (HTTP listener)
  checked against ``sasl.users.file``; the subject of a TLS client certificate;
  :data:`BROKER_PRINCIPAL` for holders of the cluster credential (the other brokers:
  always super users); ``User:ANONYMOUS`` otherwise.  On a SASL listener an
  unauthenticated request is refused (SASL_AUTHENTICATION_FAILED).
* **ACLs.** With ``authorizer.class.name`` set, :meth:`Security.allowed` asks the
  :class:`~minikafka.auth.acls.Authorizer` (rules from ZooKeeper, kept by
  :class:`~minikafka.broker.acl_store.AclStore`) whether the context's principal, from
  its host, may do an operation; refusals are logged and counted.  Without one,
  everyone may do everything, as in Kafka.
* **Where it is checked.** Only the request layer (:mod:`minikafka.broker.apis`) asks,
  with the context of the request it answers, as Kafka's KafkaApis does.  The services
  below it (topic admin, replica manager, coordinators) check nothing and trust their
  caller, so the broker's own work (a coordinator writing ``__consumer_offsets``,
  creating its topic) simply calls them.
"""
from __future__ import annotations

import logging
import ssl
from pathlib import Path
from typing import TYPE_CHECKING

from .. import errors
from ..auth import users as users_mod
from ..auth.acls import ANONYMOUS, Authorizer, parse_super_users
from ..config import BrokerConfig
from ..metric_names import AUTHENTICATION_FAILURES, AUTHORIZATION_FAILURES
from . import cluster_auth
from .settings import SecuritySettings

if TYPE_CHECKING:
    from .apis.context import RequestContext
    from .metrics import Metrics

log = logging.getLogger(__name__)

BROKER_PRINCIPAL = "User:minikafka-broker"  # a holder of the cluster credential

class Security:
    """Authentication and authorization settings of one broker, checked at start."""

    def __init__(self, config: BrokerConfig, metrics: "Metrics") -> None:
        self.config = config
        self.settings = s = SecuritySettings.of(config)  # static settings only
        self.metrics = metrics
        self.protocols = {name: s.protocol(name) for name in ("INTERNAL", "EXTERNAL", "KAFKA", "KAFKA_EXTERNAL")}
        self.users = users_mod.Users(self._read_users())
        if any(p.startswith("SASL") for p in self.protocols.values()) and not len(self.users):
            raise errors.InvalidConfigError("a SASL_PLAINTEXT or SASL_SSL listener needs users: set sasl.users.file "
                                            "to a file of NAME=PASSWORD lines, or give them in sasl.jaas.config "
                                            "(user_NAME=\"PASSWORD\" entries)")
        if any(p.endswith("SSL") for p in self.protocols.values()) and not s.ssl_keystore_location:
            raise errors.InvalidConfigError("an SSL or SASL_SSL listener needs ssl.keystore.location (a PEM file "
                                            "with the broker's key and certificate)")
        if self.tls("INTERNAL"):
            raise errors.InvalidConfigError("TLS on the INTERNAL (inter-broker) listener is not supported: use SSL or "
                                            "SASL_SSL on EXTERNAL, KAFKA and KAFKA_EXTERNAL, and keep INTERNAL on a "
                                            "private network (PLAINTEXT or SASL_PLAINTEXT)")
        if s.ssl_client_auth != "none" and not s.ssl_truststore_location:
            raise errors.InvalidConfigError("ssl.client.auth needs ssl.truststore.location (the CA of client "
                                            "certificates)")
        self.enabled = bool(s.authorizer_class_name)
        try:
            supers = parse_super_users(s.super_users)
        except errors.InvalidRequestError as exc:
            raise errors.InvalidConfigError(f"super.users: {exc.message}") from None
        self.authorizer = Authorizer(supers | {BROKER_PRINCIPAL}, s.allow_everyone_if_no_acl_found)
        self._server_ssl: ssl.SSLContext | None = None
        if any(self.tls(name) for name in self.protocols):
            self.server_ssl()  # a missing or wrong PEM file stops the broker before it binds

    def _read_users(self) -> dict[str, str]:
        """The users of ``sasl.users.file`` and of ``sasl.jaas.config``'s ``user_NAME`` entries."""
        jaas = self.settings.sasl_jaas_config
        users = users_mod.parse_jaas_users(jaas) if jaas else {}
        path = self.settings.sasl_users_file
        if not path:
            return users
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise errors.InvalidConfigError(f"cannot read sasl.users.file {path}: {exc.strerror or exc}") from None
        return {**users_mod.parse_users(text, f"sasl.users.file {path}"), **users}

    # -- TLS ---------------------------------------------------------------------------
    def tls(self, listener: str) -> bool:
        return self.protocols[listener].endswith("SSL")

    def sasl(self, listener: str) -> bool:
        return self.protocols[listener].startswith("SASL")

    def server_ssl(self) -> ssl.SSLContext:
        """The TLS context of this broker's SSL listeners (built once)."""
        if self._server_ssl is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            s = self.settings
            keystore, truststore = s.ssl_keystore_location, s.ssl_truststore_location
            try:
                ctx.load_cert_chain(keystore, password=s.ssl_key_password)
            except (OSError, ssl.SSLError) as exc:
                raise errors.InvalidConfigError(
                    f"cannot load ssl.keystore.location {keystore}: {_why(exc, 'a PEM private key and certificate')}") from None
            try:
                if truststore:
                    ctx.load_verify_locations(truststore)
            except (OSError, ssl.SSLError) as exc:
                raise errors.InvalidConfigError(
                    f"cannot load ssl.truststore.location {truststore}: {_why(exc, 'PEM CA certificates')}") from None
            ctx.verify_mode = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                               "required": ssl.CERT_REQUIRED}[s.ssl_client_auth]
            self._server_ssl = ctx
        return self._server_ssl

    # -- authentication -------------------------------------------------------------------
    def http_principal(self, listener: str, headers, peercert: dict | None) -> str:
        """The principal of an HTTP request on ``listener``: cluster credential, then Basic
        authentication, then the TLS client certificate.  SASL_AUTHENTICATION_FAILED for a
        wrong password, or for no user at all on a SASL listener."""
        presented = headers.get(cluster_auth.CLUSTER_CREDENTIAL_HEADER)
        if presented is not None and self.config.cluster_secret is not None \
                and cluster_auth.allowed(self.config.cluster_secret, presented):
            return BROKER_PRINCIPAL
        auth = headers.get("Authorization")
        if auth:
            try:
                return self.users.check(*users_mod.parse_basic(auth))
            except errors.SaslAuthenticationFailedError:
                self.metrics.count(AUTHENTICATION_FAILURES)
                raise
        if self.sasl(listener):
            self.metrics.count(AUTHENTICATION_FAILURES)
            raise errors.SaslAuthenticationFailedError(
                f"the {listener} listener is {self.protocols[listener]}: send a user and password "
                f"(Authorization: Basic)")
        return users_mod.cert_principal(peercert) or ANONYMOUS

    def plain(self, token: bytes) -> str:
        """Check a SASL/PLAIN token (Kafka listener); the principal, or SASL_AUTHENTICATION_FAILED."""
        try:
            return self.users.check(*users_mod.parse_plain(token))
        except errors.SaslAuthenticationFailedError:
            self.metrics.count(AUTHENTICATION_FAILURES)
            raise

    # -- authorization ----------------------------------------------------------------------
    def allowed(self, ctx: "RequestContext", operation: str, resource_type: str, name: str,
                *alternatives: tuple[str, str], quiet: bool = False) -> bool:
        """Whether the principal of the request ``ctx`` may do ``operation`` on the resource
        (or on one of the ``(resource_type, name)`` alternatives: Create on the Cluster or
        on the Topic); a refusal is logged and counted (minikafka_authorization_failures_total)
        unless ``quiet`` (what Kafka leaves out of an answer rather than refuses)."""
        if not self.enabled:
            return True
        who, host = ctx.principal, ctx.client_host or "*"
        if any(self.authorizer.authorize(who, host, operation, rtype, rname)
               for rtype, rname in ((resource_type, name), *alternatives)):
            return True
        if quiet:
            return False
        self.metrics.count(AUTHORIZATION_FAILURES)
        log.info("denied %s %s on %s:%s from %s", who, operation, resource_type, name, host)
        return False

    def require(self, ctx: "RequestContext", operation: str, resource_type: str, name: str) -> None:
        """Raise the resource type's *_AUTHORIZATION_FAILED unless allowed."""
        if not self.allowed(ctx, operation, resource_type, name):
            raise refusal(ctx, operation, resource_type, name)

    def refused(self, ctx: "RequestContext", operation: str, resource_type: str, name: str) -> errors.KafkaError | None:
        """The refusal of ``operation`` on the resource (None when allowed): the error of
        one entry of a request answered entry by entry."""
        if self.allowed(ctx, operation, resource_type, name):
            return None
        return refusal(ctx, operation, resource_type, name)

    def describable(self, ctx: "RequestContext", wanted: list[str] | None,
                    every: list[str]) -> tuple[list[str], set[str]]:
        """A Metadata request's topics and those refused, as Kafka answers: asked for every
        topic (``wanted`` None), the ones the principal may not Describe are left out; asked by
        name, they are answered TOPIC_AUTHORIZATION_FAILED (the second set)."""
        if wanted is None:
            return [t for t in every if self.allowed(ctx, "Describe", "Topic", t, quiet=True)], set()
        return list(wanted), {t for t in wanted if not self.allowed(ctx, "Describe", "Topic", t)}


def refusal(ctx: "RequestContext", operation: str, resource_type: str, name: str) -> errors.KafkaError:
    """The error Kafka answers when ``operation`` on the resource is not allowed."""
    cls = {"Topic": errors.TopicAuthorizationFailedError, "Group": errors.GroupAuthorizationFailedError,
           "TransactionalId": errors.TransactionalIdAuthorizationFailedError}.get(
        resource_type, errors.ClusterAuthorizationFailedError)
    return cls(f"not authorized to {operation} {resource_type} {name!r} (principal "
               f"{ctx.principal})")


def _why(exc: Exception, expected: str) -> str:
    """A TLS file problem in words (not OpenSSL's "PEM lib (_ssl.c:...)")."""
    if isinstance(exc, ssl.SSLError):
        return f"not {expected} (or a wrong ssl.key.password)"
    return (exc.strerror or str(exc)).lower() if isinstance(exc, OSError) else str(exc)
