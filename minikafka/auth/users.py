"""Who a client is: users with passwords (SASL/PLAIN), and the principal of a connection.

Pure: parsing and checking only; the broker reads the file (``sasl.users.file``) and
the listeners call :meth:`Users.check`.

* The users file has one ``NAME=PASSWORD`` per line (``#`` starts a comment), the pairs
  Kafka's PLAIN login module takes as ``user_NAME="PASSWORD"``.  The broker setting
  ``sasl.jaas.config`` may give them that way too (:func:`parse_jaas_users`).
* On the Kafka listener a client sends SASL/PLAIN's token, ``authzid NUL user NUL
  password`` (RFC 4616), after SaslHandshake; :func:`parse_plain` reads it.
* On the HTTP listener the same user and password travel in an ``Authorization: Basic``
  header (:func:`parse_basic`): SASL/PLAIN's content in HTTP's framing.
* An authenticated client's principal is ``User:NAME``; a TLS client certificate's is
  ``User:`` and its subject (Kafka's default ``CN=...,OU=...`` form); anyone else is
  ``User:ANONYMOUS``.
"""
from __future__ import annotations

import base64
import binascii
import hmac
import re

from ..errors import InvalidConfigError, SaslAuthenticationFailedError
from .acls import ANONYMOUS

__all__ = ["ANONYMOUS", "Users", "cert_principal", "parse_basic", "parse_jaas_users", "parse_plain", "parse_users"]

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_JAAS_FLAGS = ("required", "requisite", "sufficient", "optional")
_JAAS_OPTION = re.compile(r'\s*([A-Za-z0-9_.\-]+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def parse_users(text: str, source: str = "sasl.users.file") -> dict[str, str]:
    """``NAME=PASSWORD`` lines -> {name: password}; INVALID_CONFIG on a bad line."""
    users: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, password = line.partition("=")
        name = name.strip()
        if not sep or not name or not password or any(c in name for c in ":;, \t"):
            raise InvalidConfigError(f"{source} line {n}: expected NAME=PASSWORD (a name without ':', ';', ',' "
                                     f"or spaces, and a password)")
        users[name] = password
    return users


def parse_jaas_users(text: str) -> dict[str, str]:
    """The users of a broker's ``sasl.jaas.config``, Kafka's one-line JAAS entry for SASL/PLAIN:
    ``org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret"
    user_bob="bob-secret";`` -> {name: password}.  ``username`` and ``password`` (the
    broker's own login to other brokers in Kafka) are accepted and not used: brokers here
    authenticate to each other with the cluster credential.  INVALID_CONFIG on another login
    module, a missing flag or ``;``, or an option that is not ``key="value"``."""
    body = text.strip()
    module, _, rest = body.partition(" ")
    if module != PLAIN_LOGIN_MODULE:
        raise InvalidConfigError(f"sasl.jaas.config: expected {PLAIN_LOGIN_MODULE} first (SASL/PLAIN is the "
                                 f"only mechanism)")
    flag, _, options = rest.strip().partition(" ")
    if flag.endswith(";"):  # no options: "... required;"
        flag, options = flag[:-1], ";"
    if flag not in _JAAS_FLAGS:
        raise InvalidConfigError(f"sasl.jaas.config: the login module's flag must follow it, one of "
                                 f"{', '.join(_JAAS_FLAGS)}")
    options = options.strip()
    if not options.endswith(";"):
        raise InvalidConfigError("sasl.jaas.config must end with ';'")
    users: dict[str, str] = {}
    pos, options = 0, options[:-1]
    while pos < len(options.rstrip()):
        m = _JAAS_OPTION.match(options, pos)
        if m is None:
            raise InvalidConfigError('sasl.jaas.config: expected key="value" options, separated by spaces')
        key, value = m.group(1), re.sub(r'\\(.)', r'\1', m.group(2))
        if key.startswith("user_"):
            name = key[len("user_"):]
            if not name or not value:
                raise InvalidConfigError(f"sasl.jaas.config: {key} needs a name and a password")
            users[name] = value
        pos = m.end()
    return users


def parse_plain(token: bytes) -> tuple[str, str]:
    """SASL/PLAIN's ``[authzid] NUL authcid NUL passwd`` -> (user, password)."""
    parts = token.split(b"\x00")
    if len(parts) != 3 or not parts[1]:
        raise SaslAuthenticationFailedError("a SASL/PLAIN token is authzid NUL user NUL password")
    try:
        authzid, user, password = (p.decode("utf-8") for p in parts)
    except UnicodeDecodeError:
        raise SaslAuthenticationFailedError("a SASL/PLAIN token must be UTF-8") from None
    if authzid and authzid != user:
        raise SaslAuthenticationFailedError("SASL/PLAIN: an authorization id other than the user is not allowed")
    return user, password


def parse_basic(header: str) -> tuple[str, str]:
    """``Basic base64(user:password)`` -> (user, password)."""
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic":
        raise SaslAuthenticationFailedError(f"unsupported Authorization scheme {scheme!r}: expected Basic")
    try:
        user, sep, password = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise SaslAuthenticationFailedError("the Authorization header is not base64 of user:password") from None
    if not sep or not user:
        raise SaslAuthenticationFailedError("the Authorization header is not base64 of user:password")
    return user, password


def basic_header(user: str, password: str) -> str:
    """The ``Authorization`` header value a client sends."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def cert_principal(peercert: dict | None) -> str | None:
    """``User:CN=...,OU=...`` from a verified peer certificate (``ssl.getpeercert()``), most
    specific part first as Kafka prints an X.500 name; None without a certificate."""
    if not peercert or not peercert.get("subject"):
        return None
    parts = [f"{k}={v}" for rdn in reversed(peercert["subject"]) for k, v in rdn]
    short = {"commonName": "CN", "organizationalUnitName": "OU", "organizationName": "O", "localityName": "L",
             "stateOrProvinceName": "ST", "countryName": "C"}
    return "User:" + ",".join(short.get(k, k) + "=" + v for k, _, v in (p.partition("=") for p in parts))


class Users:
    """The users who may authenticate, by name and password."""

    def __init__(self, users: dict[str, str]) -> None:
        self._users = dict(users)

    def __len__(self) -> int:
        return len(self._users)

    def check(self, user: str, password: str) -> str:
        """The principal of a user whose password matches; SASL_AUTHENTICATION_FAILED otherwise
        (the same words for an unknown user and a wrong password, as Kafka)."""
        known = self._users.get(user)
        if known is None or not hmac.compare_digest(known.encode(), password.encode()):
            raise SaslAuthenticationFailedError("Authentication failed: Invalid username or password")
        return f"User:{user}"
