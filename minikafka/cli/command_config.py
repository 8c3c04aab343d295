"""``--command-config FILE``: how the CLI reaches a secured listener, as Kafka's tools take it.

The file is a Java properties file with Kafka's and librdkafka's client names, those
of :mod:`minikafka.client.properties` (``security.protocol``, ``sasl.jaas.config`` or
``sasl.username`` / ``sasl.password``, ``ssl.ca.location``...).

Other keys are reported on stderr and ignored, as Kafka's tools warn of unknown configs.
:func:`parse` is pure; :func:`client_options` reads the file named on the command line.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from ..client.properties import SECURITY_PROPERTIES, security_options
from ..errors import ClientError

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
    try:
        opts = security_options(props)
    except ClientError as exc:
        raise ClientError(f"--command-config: {exc}") from None
    return opts, sorted(set(props) - SECURITY_PROPERTIES)


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
