"""Kafka's tool spellings on minikafka's command line: the action as a flag.

kafka-topics, kafka-consumer-groups and kafka-configs take their action as an option
(``kafka-topics --create --topic x``, ``kafka-consumer-groups --describe --group g``,
``kafka-configs --describe --entity-type topics --entity-name x``); minikafka's commands
take it as a subcommand (``topics create --topic x``).  :func:`translate` rewrites the
first form into the second before the arguments are parsed, so both work:

* ``topics --create|--list|--describe|--delete|--alter ...`` -> ``topics create|list|...``
* ``groups --list|--describe|--delete|--reset-offsets ...`` -> ``groups list|describe|...``
* ``configs --describe|--alter --entity-type topics|brokers --entity-name N`` ->
  ``configs describe|alter --topic N`` / ``--broker N``; ``--entity-type brokers
  --entity-default`` -> ``--broker-defaults``.

A command line with a subcommand already is left as it is.  Two actions, or an entity
type minikafka does not have, are a ClientError (one line, exit 2).  Pure: no I/O.
"""
from __future__ import annotations

from typing import Sequence

from ..errors import ClientError

ACTIONS = {
    "topics": ("create", "list", "describe", "delete", "alter"),
    "groups": ("list", "describe", "delete", "reset-offsets"),
    "configs": ("describe", "alter"),
}
ENTITY_TYPES = {"topics": "--topic", "topic": "--topic", "brokers": "--broker", "broker": "--broker"}


def _split_equals(args: list[str], names: tuple[str, ...]) -> list[str]:
    """``--name=value`` -> ``--name value`` for the given option names."""
    out: list[str] = []
    for arg in args:
        name, sep, value = arg.partition("=")
        if sep and name in names:
            out += [name, value]
        else:
            out.append(arg)
    return out


def _take(args: list[str], option: str) -> str | None:
    """Remove ``option VALUE`` from ``args``; its value (None when absent)."""
    if option not in args:
        return None
    i = args.index(option)
    if i + 1 >= len(args):
        raise ClientError(f"{option} needs a value")
    value = args[i + 1]
    del args[i:i + 2]
    return value


def _entity(args: list[str]) -> list[str]:
    """kafka-configs' ``--entity-type T --entity-name N`` / ``--entity-default`` -> ``--topic N``,
    ``--broker N`` or ``--broker-defaults``."""
    args = _split_equals(args, ("--entity-type", "--entity-name"))
    entity_type = _take(args, "--entity-type")
    entity_name = _take(args, "--entity-name")
    default = "--entity-default" in args
    if entity_type is None:
        if entity_name is not None or default:
            raise ClientError("--entity-name and --entity-default need --entity-type topics|brokers")
        return args
    flag = ENTITY_TYPES.get(entity_type)
    if flag is None:
        raise ClientError(f"--entity-type {entity_type}: minikafka configs describes and alters topics and "
                          f"brokers (--entity-type topics|brokers)")
    if default:
        if flag != "--broker" or entity_name is not None:
            raise ClientError("--entity-default goes with --entity-type brokers and no --entity-name")
        args.remove("--entity-default")
        return args + ["--broker-defaults"]
    if entity_name is None:
        raise ClientError(f"--entity-type {entity_type} needs --entity-name")
    return args + [flag, entity_name]


def translate(argv: Sequence[str]) -> list[str]:
    """``argv`` with a Kafka-style action flag turned into minikafka's subcommand."""
    args = list(argv)
    if not args or args[0] not in ACTIONS:
        return args
    command, rest = args[0], args[1:]
    if rest and not rest[0].startswith("-"):
        return args  # a subcommand is given (or a mistake argparse will name)
    given = [a for a in rest if a.startswith("--") and a[2:] in ACTIONS[command]]
    if not given:
        return args
    if len(set(given)) > 1:
        raise ClientError(f"give one action: {' and '.join(dict.fromkeys(given))} both given")
    action = given[0]
    rest = [a for a in rest if a != action]
    if command == "configs":
        rest = _entity(rest)
    return [command, action[2:], *rest]
