"""Helpers shared by the CLI's client commands (topics, produce, consume, ...)."""
from __future__ import annotations

import argparse
import re

from ..cluster.state import DEFAULT_DIR, bootstrap_servers
from ..errors import ClientError
from . import command_config


def add_dir_and_bootstrap(parser: argparse.ArgumentParser) -> None:
    """Add ``--dir`` (the local cluster folder), ``--bootstrap-server HOST:PORT[,...]`` and
    ``--command-config FILE`` (security options, :mod:`minikafka.cli.command_config`)."""
    parser.add_argument("--dir", default=DEFAULT_DIR,
                        help=f"cluster folder written by `minikafka cluster up` (default {DEFAULT_DIR})")
    parser.add_argument("--bootstrap-server", dest="bootstrap_server", metavar="HOST:PORT[,HOST:PORT...]",
                        default=None, help="brokers to contact first (default: the brokers recorded in --dir)")
    command_config.add_flag(parser)


def resolve_bootstrap(args: argparse.Namespace) -> str:
    """The ``--bootstrap-server`` value, else the brokers of the cluster in ``--dir``.

    Raises ClientError ("no cluster in DIR ...") when neither is available.
    """
    value = getattr(args, "bootstrap_server", None)
    if value:
        return value
    return bootstrap_servers(getattr(args, "dir", DEFAULT_DIR))


# ---------------------------------------------------------------- argument types
# Each says what it expected in words (argparse prints "argument X: <that>" as the one
# error line), never Python's own text ("invalid literal for int()", "non-empty str").

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def topic_name(text: str) -> str:
    """argparse type for a topic: Kafka's rule, 1-249 characters of [a-zA-Z0-9._-],
    not '.' or '..' (the broker refuses others with INVALID_TOPIC_EXCEPTION)."""
    if not _LEGAL_TOPIC.fullmatch(text) or text in (".", ".."):
        what = "must not be empty" if not text else f"{text!r} is illegal"
        raise argparse.ArgumentTypeError(f"topic name {what}: use 1-249 characters from [a-zA-Z0-9._-], "
                                         f"not '.' or '..'")
    return text


def group_id(text: str) -> str:
    """argparse type for a consumer group id: any text but the empty one."""
    if not text:
        raise argparse.ArgumentTypeError("group id must not be empty")
    return text


def whole_number(text: str) -> int:
    """argparse type for an integer, e.g. an offset."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def broker_id(text: str) -> int:
    """argparse type for a broker id (0 or more)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a broker id (a whole number, 0 or more), got {text!r}")
    return value


# ---------------------------------------------------------------- Kafka's option spellings
# kafka-topics, kafka-console-producer/consumer and kafka-consumer-groups name the topic
# and the group with --topic T and --group G; ours take them as a positional argument.
# Both are accepted: add_named() registers the pair, merge_named() (called by main on
# every parsed command line) puts the one given under the positional's name.

_NAMED = "_named_arguments"


def add_named(parser: argparse.ArgumentParser, dest: str, option: str, metavar: str, type_, help: str,
              required: bool = True) -> None:
    """A positional ``METAVAR`` and, as in Kafka's tools, ``--OPTION METAVAR`` for the same
    value (e.g. ``topics create T`` or ``topics create --topic T``)."""
    parser.add_argument(dest, metavar=metavar, nargs="?", default=None, type=type_, help=help)
    parser.add_argument(f"--{option}", dest=f"{dest}_option", metavar=metavar, default=None, type=type_,
                        help=f"the same as {metavar}, as Kafka's tools spell it")
    named = list(parser.get_default(_NAMED) or [])
    parser.set_defaults(**{_NAMED: named + [(dest, option, metavar, required)]})


def merge_named(args: argparse.Namespace) -> None:
    """Put ``--topic``/``--group`` under the positional's name; a ClientError when both
    differ or a required one is missing."""
    for dest, option, metavar, required in getattr(args, _NAMED, None) or ():
        positional, flag = getattr(args, dest), getattr(args, f"{dest}_option")
        if positional is not None and flag is not None and positional != flag:
            raise ClientError(f"give {metavar} once: {positional!r} and --{option} {flag!r} differ")
        value = positional if positional is not None else flag
        if value is None and required:
            raise ClientError(f"the following arguments are required: {metavar} (or --{option} {metavar})")
        setattr(args, dest, value)
