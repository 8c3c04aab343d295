"""Kafka client properties for security, turned into our clients' options.

Kafka's tools read ``--command-config`` files and Spark's Kafka source takes
``kafka.``-prefixed options with the Java client's names; librdkafka has its own names
for some.  :func:`security_options` takes either and returns the keyword arguments of
:class:`~minikafka.client.connection.ClientSecurity`:

* ``security.protocol``: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL;
* ``sasl.mechanism`` (or ``sasl.mechanisms``): PLAIN;
* ``sasl.username`` / ``sasl.password``, or ``sasl.jaas.config`` with the PLAIN login
  module's ``username="..." password="..."``;
* ``ssl.ca.location`` or ``ssl.truststore.location`` (a PEM file of CAs);
* ``ssl.certificate.location`` / ``ssl.key.location``, or ``ssl.keystore.location`` (PEM
  key and certificate), for a client certificate;
* ``ssl.endpoint.identification.algorithm``: empty turns off the host name check.

Pure: no I/O.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from ..errors import ClientError

SECURITY_PROPERTIES = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password", "sasl.jaas.config",
    "ssl.ca.location", "ssl.truststore.location", "ssl.truststore.type", "ssl.keystore.type",
    "ssl.certificate.location", "ssl.key.location", "ssl.keystore.location", "ssl.endpoint.identification.algorithm",
})
_JAAS = re.compile(r'(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')


def security_options(props: Mapping[str, str]) -> dict[str, Any]:
    """ClientSecurity's keyword arguments from Kafka client properties (other keys are
    not looked at); ClientError for a mechanism other than PLAIN."""
    opts: dict[str, Any] = {}
    if "security.protocol" in props:
        opts["security_protocol"] = props["security.protocol"]
    mechanism = props.get("sasl.mechanism", props.get("sasl.mechanisms", "PLAIN"))
    if mechanism.upper() != "PLAIN":
        raise ClientError(f"sasl.mechanism {mechanism} is not supported (PLAIN only)")
    user, password = props.get("sasl.username"), props.get("sasl.password")
    if "sasl.jaas.config" in props:
        found = dict(_JAAS.findall(props["sasl.jaas.config"]))
        user, password = found.get("username", user), found.get("password", password)
    if user is not None:
        opts["sasl_plain_username"] = user
    if password is not None:
        opts["sasl_plain_password"] = password
    ca = props.get("ssl.ca.location") or props.get("ssl.truststore.location")
    if ca:
        opts["ssl_cafile"] = ca
    cert = props.get("ssl.certificate.location") or props.get("ssl.keystore.location")
    if cert:
        opts["ssl_certfile"] = cert
        opts["ssl_keyfile"] = props.get("ssl.key.location") or cert
    if props.get("ssl.endpoint.identification.algorithm", "https") == "":
        opts["ssl_check_hostname"] = False
    return opts
