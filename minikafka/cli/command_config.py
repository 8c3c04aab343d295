"""``--command-config FILE``: how the CLI reaches a secured listener, as Kafka's tools take it.

The file is a Java properties file with Kafka's and librdkafka's client names:

* ``security.protocol``: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL;
* ``sasl.mechanism`` (or ``sasl.mechanisms``): PLAIN;
* ``sasl.username`` / ``sasl.password``, or ``sasl.jaas.config`` with the PLAIN login
  module's ``username="..." password="..."``;
* ``ssl.ca.location`` or ``ssl.truststore.location`` (a PEM file of CAs);
* ``ssl.certificate.location`` / ``ssl.key.location``, or ``ssl.keystore.location`` (PEM
  key and certificate), for a client certificate;
* ``ssl.endpoint.identification.algorithm``: empty turns off the host name check.

Other keys are reported on stderr and ignored, as Kafka's tools warn of unknown configs.
:func:`parse` is pure; :func:`client_options` reads the file named on the command line.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from ..errors import ClientError

_JAAS = re.compile(r'(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')
_KNOWN = {"security.protocol", "sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password",
          "sasl.jaas.config", "ssl.ca.location", "ssl.truststore.location", "ssl.truststore.type",
          "ssl.keystore.type", "ssl.certificate.location", "ssl.key.location", "ssl.keystore.location",
          "ssl.endpoint.identification.algorithm"}


def parse_properties(text: str) -> dict[str, str]:
    """``key=value`` (or ``key: value``) lines; ``#`` and ``!`` start comments."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        m = re.match(r"([^=:\s]+)\s*[=:]\s*(.*)", line)
        if m is None:
            raise ClientError(f"--command-config: expected key=value, got {line!r}")
        out[m.group(1)] = m.group(2).strip()
    return out


def parse(text: str) -> tuple[dict[str, Any], list[str]]:
    """The client options (ClientSecurity's keyword arguments) of a properties text, and
    the keys that were ignored."""
    props = parse_properties(text)
    opts: dict[str, Any] = {}
    if "security.protocol" in props:
        opts["security_protocol"] = props["security.protocol"]
    mechanism = props.get("sasl.mechanism", props.get("sasl.mechanisms", "PLAIN"))
    if mechanism.upper() != "PLAIN":
        raise ClientError(f"--command-config: sasl.mechanism {mechanism} is not supported (PLAIN only)")
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
    return opts, sorted(set(props) - _KNOWN)


def add_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--command-config", dest="command_config", metavar="FILE", default=None,
                        help="client properties for a secured listener (security.protocol, sasl.username, "
                             "sasl.password or sasl.jaas.config, ssl.ca.location...), as Kafka's tools take")


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """The security options of ``--command-config`` (none without it)."""
    path = getattr(args, "command_config", None)
    if not path:
        return {}
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ClientError(f"cannot read --command-config {path}: {(exc.strerror or str(exc)).lower()}") from None
    opts, ignored = parse(text)
    for key in ignored:
        print(f"minikafka: warning: --command-config: {key} is not a known config; ignored", file=sys.stderr)
    return opts
