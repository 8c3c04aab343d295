"""Helpers shared by the CLI's client commands (topics, produce, consume, ...)."""
from __future__ import annotations

import argparse

from ..cluster.state import DEFAULT_DIR, bootstrap_servers


def add_dir_and_bootstrap(parser: argparse.ArgumentParser) -> None:
    """Add ``--dir`` (the local cluster folder) and ``--bootstrap-server HOST:PORT[,...]``."""
    parser.add_argument("--dir", default=DEFAULT_DIR,
                        help=f"cluster folder written by `minikafka cluster up` (default {DEFAULT_DIR})")
    parser.add_argument("--bootstrap-server", dest="bootstrap_server", metavar="HOST:PORT[,HOST:PORT...]",
                        default=None, help="brokers to contact first (default: the brokers recorded in --dir)")


def resolve_bootstrap(args: argparse.Namespace) -> str:
    """The ``--bootstrap-server`` value, else the brokers of the cluster in ``--dir``.

    Raises ClientError ("no cluster in DIR ...") when neither is available.
    """
    value = getattr(args, "bootstrap_server", None)
    if value:
        return value
    return bootstrap_servers(getattr(args, "dir", DEFAULT_DIR))
