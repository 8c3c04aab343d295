"""Client subcommands of ``minikafka``: ``topics``, ``produce``, ``consume``.

Each handler takes the parsed arguments and returns an exit status.  Broker and
usage errors (KafkaError, ClientError) propagate to ``cli/main.py``, which
prints them as one ``minikafka: error: ...`` line and exits 2.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import re
import signal
import sys
import threading
import time
from typing import Any

from ..errors import ClientError
from ..zk.layout import is_internal_topic
from . import watch
from .command_config import client_options
from .common import add_dir_and_bootstrap, add_named, broker_id, group_id, resolve_bootstrap, topic_name, whole_number


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    """Register ``topics``, ``produce`` and ``consume`` on the main parser's subparsers."""
    _add_topics(subparsers)
    _add_configs(subparsers)
    _add_produce(subparsers)
    _add_consume(subparsers)


def _add_topics(subparsers: argparse._SubParsersAction) -> None:
    """``topics`` and its commands."""
    topics = subparsers.add_parser("topics", help="create, list and describe topics",
                                   description="Create, list and describe topics.")
    tsub = topics.add_subparsers(dest="topics_command", metavar="COMMAND", required=True,
                                 parser_class=type(topics))
    _add_topics_create(tsub)
    _add_topics_list(tsub)
    _add_topics_describe(tsub)
    _add_topics_elect_leaders(tsub)
    _add_topics_alter(tsub)
    _add_topics_delete(tsub)
    _add_topics_delete_records(tsub)
    _add_topics_reassign(tsub)


def _add_topics_create(tsub: argparse._SubParsersAction) -> None:
    """``topics create``."""
    create = tsub.add_parser("create", help="create a topic",
                             description="Create a topic. Without --partitions or --replication-factor the broker "
                                         "uses its num.partitions and default.replication.factor, as in Kafka.")
    add_named(create, "name", "topic", "NAME", topic_name, "topic name")
    create.add_argument("--partitions", type=_positive, default=None,
                        help="number of partitions (default: the broker's num.partitions)")
    create.add_argument("--replication-factor", dest="replication_factor", type=_positive, default=None,
                        help="replicas per partition, at most the number of live brokers (default: the broker's "
                             "default.replication.factor)")
    create.add_argument("--replica-assignment", dest="replica_assignment", default=None, metavar="B:B,B:B,...",
                        help="instead of --partitions/--replication-factor, as kafka-topics: one broker list per "
                             "partition, e.g. 1:2,2:3 (partition 0 on 1 and 2, led by 1; partition 1 on 2 and 3)")
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a topic setting under its Kafka name, e.g. min.insync.replicas=2 (repeatable)")
    create.add_argument("--if-not-exists", dest="if_not_exists", action="store_true",
                        help="succeed quietly when the topic already exists")
    add_dir_and_bootstrap(create)
    create.set_defaults(func=cmd_topics_create)


def _add_topics_list(tsub: argparse._SubParsersAction) -> None:
    """``topics list``."""
    lst = tsub.add_parser("list", help="list topic names",
                          description="Print every topic name, one per line; internal topics (names starting "
                                      "with __, such as __consumer_offsets) come last.")
    _add_exclude_internal(lst)
    add_dir_and_bootstrap(lst)
    lst.set_defaults(func=cmd_topics_list)


def _add_topics_describe(tsub: argparse._SubParsersAction) -> None:
    """``topics describe`` and its reports."""
    describe = tsub.add_parser(
        "describe", help="leaders, replicas, ISR, epochs, HW, LSO and LEOs",
        description="Describe partitions: leader, replicas, ISR, leader epoch, the leader's high watermark "
                    "(and its last stable offset, LSO, where an open transaction holds it below the high "
                    "watermark) and every replica's LEO as the brokers report them. Internal topics (names starting with __, "
                    "such as __consumer_offsets) come after the others. On a cluster with many partitions, "
                    "a pattern (NAME with * or ?), --summary or the --under-replicated-partitions, "
                    "--unavailable-partitions, --under-min-isr-partitions and --at-min-isr-partitions "
                    "reports (as kafka-topics.sh spells them) keep the output short.")
    add_named(describe, "name", "topic", "NAME", topic_or_pattern,
              "topic, or a pattern of names with * ? and [...] such as 'orders-*' (default: every topic)",
              required=False)
    _add_exclude_internal(describe)
    describe.add_argument("--under-replicated-partitions", dest="under_replicated", action="store_true",
                          help="only partitions whose ISR is smaller than their replica list")
    describe.add_argument("--unavailable-partitions", dest="unavailable", action="store_true",
                          help="only partitions without a live leader")
    describe.add_argument("--under-min-isr-partitions", dest="under_min_isr", action="store_true",
                          help="only partitions whose ISR is smaller than their topic's min.insync.replicas "
                               "(acks=all produces fail with NOT_ENOUGH_REPLICAS)")
    describe.add_argument("--at-min-isr-partitions", dest="at_min_isr", action="store_true",
                          help="only partitions whose ISR is exactly their topic's min.insync.replicas (one more "
                               "lost replica stops acks=all produces)")
    describe.add_argument("--summary", action="store_true",
                          help="one line per topic instead of one per partition: partitions, replication factor, "
                               "offline, under-replicated and under-min-ISR partitions, partitions led per broker")
    describe.add_argument("--json", action="store_true",
                          help="print a JSON document with every field, including each replica's log checksum "
                               "below the leader's HW (replicas agree when the checksums are equal)")
    add_dir_and_bootstrap(describe)
    watch.add_flags(describe)
    describe.set_defaults(func=watch.watchable(cmd_topics_describe, "minikafka topics describe",
                                                        _topics_describe_view))


def _add_topics_elect_leaders(tsub: argparse._SubParsersAction) -> None:
    """``topics elect-leaders``."""
    elect = tsub.add_parser(
        "elect-leaders", help="move leadership back to the preferred replicas (or elect uncleanly)",
        description="Leader election, as kafka-leader-election does. PREFERRED (the default): make each "
                    "partition's first replica its leader again, where that replica is alive and in the ISR "
                    "(default: every partition that needs it). UNCLEAN: give a leader to partitions that have "
                    "none, an out-of-sync live replica if no ISR replica is alive: the records it lacks are "
                    "lost (default: every partition without a leader).")
    elect.add_argument("--election-type", dest="election_type", type=_election_type, default="PREFERRED",
                       metavar="PREFERRED|UNCLEAN", help="which election (default PREFERRED; either case)")
    elect.add_argument("--all-topic-partitions", dest="all_topic_partitions", action="store_true",
                       help="every partition (the default without --topic), as kafka-leader-election spells it")
    elect.add_argument("--topic", default=None, type=topic_name, help="only this topic's partitions")
    elect.add_argument("--partition", type=_non_negative, default=None, metavar="P",
                       help="only this partition (needs --topic)")
    add_dir_and_bootstrap(elect)
    elect.set_defaults(func=cmd_topics_elect_leaders)


def _add_topics_alter(tsub: argparse._SubParsersAction) -> None:
    """``topics alter``."""
    alter = tsub.add_parser("alter", help="add partitions to a topic",
                            description="Raise a topic's partition count, as kafka-topics.sh --alter --partitions "
                                        "does: the new partitions are placed like a new topic's and get leaders.")
    add_named(alter, "name", "topic", "NAME", topic_name, "topic name")
    alter.add_argument("--partitions", type=_positive, required=True, help="the new total number of partitions")
    add_dir_and_bootstrap(alter)
    alter.set_defaults(func=cmd_topics_alter)


def _add_topics_delete(tsub: argparse._SubParsersAction) -> None:
    """``topics delete``."""
    delete = tsub.add_parser("delete", help="delete a topic",
                             description="Delete a topic: its replicas are stopped and their logs deleted.")
    add_named(delete, "name", "topic", "NAME", topic_name, "topic name")
    add_dir_and_bootstrap(delete)
    delete.set_defaults(func=cmd_topics_delete)


def _add_topics_delete_records(tsub: argparse._SubParsersAction) -> None:
    """``topics delete-records``."""
    delrec = tsub.add_parser(
        "delete-records", help="delete records below an offset (DeleteRecords)",
        description="Move partitions' log start offsets forward, as kafka-delete-records does: records below "
                    "the given offset are gone for consumers (whole segments below it are deleted). The file is "
                    'the JSON of kafka-delete-records: {"partitions": [{"topic": "t", "partition": 0, "offset": 5}], '
                    '"version": 1}; offset -1 means the high watermark.')
    delrec.add_argument("--offset-json-file", dest="offset_json_file", required=True, metavar="FILE",
                        help="the partitions and their new log start offsets, in kafka-delete-records' JSON")
    add_dir_and_bootstrap(delrec)
    delrec.set_defaults(func=cmd_topics_delete_records)


def _add_topics_reassign(tsub: argparse._SubParsersAction) -> None:
    """``topics reassign``."""
    reassign = tsub.add_parser(
        "reassign", help="move a partition to other brokers",
        description="Reassign a partition to a new replica list (the first is the preferred leader). The new "
                    "replicas catch up, then the old ones are removed; follow it with `topics describe`.")
    reassign.add_argument("--topic", required=True, type=topic_name, help="the partition's topic")
    reassign.add_argument("--partition", type=_non_negative, required=True, metavar="P", help="the partition")
    reassign.add_argument("--replicas", required=True, metavar="ID,ID,...", help="new broker ids, e.g. 3,2")
    add_dir_and_bootstrap(reassign)
    reassign.set_defaults(func=cmd_topics_reassign)


def _add_configs(subparsers: argparse._SubParsersAction) -> None:
    """``configs describe`` and ``configs alter``."""
    configs = subparsers.add_parser("configs", help="describe and change topic and broker settings",
                                    description="Describe and change topic settings and dynamic broker settings, "
                                                "as kafka-configs.sh does.")
    csub = configs.add_subparsers(dest="configs_command", metavar="COMMAND", required=True,
                                  parser_class=type(configs))
    cdesc = csub.add_parser("describe", help="a topic's overrides or a broker's dynamic settings (--all: every one)",
                            description="A topic's own settings (its overrides) or a broker's dynamic settings, "
                                        "as kafka-configs --describe prints them; with --all every setting with "
                                        "its source (the topic's override, the broker's value or the default; "
                                        "for a broker: dynamic, static or default).")
    which = cdesc.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", type=topic_name, help="a topic's settings")
    which.add_argument("--broker", type=broker_id, metavar="ID", help="a broker's settings")
    cdesc.add_argument("--all", action="store_true",
                       help="every setting with its source, not only the overrides (kafka-configs --all)")
    add_dir_and_bootstrap(cdesc)
    cdesc.set_defaults(func=cmd_configs_describe)
    calter = csub.add_parser("alter", help="set or remove topic overrides or dynamic broker settings",
                             description="Set (--add-config) or remove (--delete-config) topic overrides, or the "
                                         "dynamic settings of one broker (--broker) or of every broker "
                                         "(--broker-defaults); the brokers apply the change at once.")
    target = calter.add_mutually_exclusive_group(required=True)
    target.add_argument("--topic", type=topic_name, help="settings of one topic")
    target.add_argument("--broker", type=broker_id, metavar="ID", help="dynamic settings of one broker")
    target.add_argument("--broker-defaults", dest="broker_defaults", action="store_true",
                        help="dynamic settings of every broker (kafka-configs.sh --entity-default)")
    calter.add_argument("--add-config", dest="add_config", action="append", default=[], metavar="K=V[,K=V...]",
                        help="overrides to set, e.g. min.insync.replicas=2 (repeatable)")
    calter.add_argument("--delete-config", dest="delete_config", action="append", default=[], metavar="K[,K...]",
                        help="overrides to remove (repeatable)")
    add_dir_and_bootstrap(calter)
    calter.set_defaults(func=cmd_configs_alter)


def _add_produce(subparsers: argparse._SubParsersAction) -> None:
    """``produce``."""
    produce = subparsers.add_parser(
        "produce", help="send lines of stdin as records",
        description="Send each line of standard input as one record. Prints nothing on success.")
    add_named(produce, "topic", "topic", "TOPIC", topic_name, "topic to send to")
    produce.add_argument("--acks", choices=("all", "-1", "1", "0"), default="all",
                         help="all (-1): wait for the ISR; 1: for the leader; 0: do not wait (default all)")
    produce.add_argument("--key-separator", dest="key_separator", default=None, metavar="SEP",
                         help="each line is KEY SEP VALUE (split at the first SEP)")
    produce.add_argument("--null-marker", dest="null_marker", default=None, metavar="TEXT",
                         help="a value equal to TEXT is sent as null: a tombstone, which deletes its key from a "
                              "compacted topic (kafka-console-producer's null.marker)")
    produce.add_argument("--property", dest="properties", action="append", default=[], metavar="NAME=VALUE",
                         help="a property of kafka-console-producer's line reader (repeatable): "
                              + ", ".join(READER_PROPERTIES) + "; e.g. parse.key=true key.separator=: reads "
                              "KEY:VALUE lines")
    produce.add_argument("--partition", type=_non_negative, default=None, metavar="P",
                         help="send every record to this partition (default: by key, or sticky round robin)")
    produce.add_argument("--delivery-timeout-ms", dest="delivery_timeout_ms", type=_positive, default=120000,
                         metavar="MS", help="give up on a record this long after sending it (default 120000)")
    produce.add_argument("--compression-type", dest="compression_type", default="none",
                         choices=("none", "gzip", "snappy", "lz4", "zstd"),
                         help="compress each batch with this codec (default none)")
    produce.add_argument("--no-idempotence", dest="idempotence", action="store_false",
                         help="turn off the idempotent producer (on by default with --acks all: a retried "
                              "batch is never written twice)")
    add_dir_and_bootstrap(produce)
    produce.set_defaults(func=cmd_produce)


def _add_consume(subparsers: argparse._SubParsersAction) -> None:
    """``consume``."""
    consume = subparsers.add_parser(
        "consume", help="print records of a topic",
        description="Print the committed records of a topic (every partition, or one), one per line. It stops "
                    "after --max-messages, after --timeout-ms without a record, or at Ctrl-C (or SIGTERM); then it "
                    "prints 'Processed a total of N messages' on stderr and exits 0.")
    add_named(consume, "topic", "topic", "TOPIC", topic_name, "topic to read")
    consume.add_argument("--from-beginning", dest="from_beginning", action="store_true",
                         help="start at the log start instead of the end")
    consume.add_argument("--partition", type=_non_negative, default=None, metavar="P",
                         help="read only this partition")
    consume.add_argument("--offset", default=None, metavar="N|earliest|latest",
                         help="with --partition, as kafka-console-consumer: start at offset N (below the log start "
                              "or past the end: reset to the log start with --from-beginning, else to the end)")
    consume.add_argument("--max-messages", dest="max_messages", type=_positive, default=None, metavar="N",
                         help="stop after N records")
    consume.add_argument("--timeout-ms", dest="timeout_ms", type=_non_negative, default=None, metavar="T",
                         help="stop when no record arrived for T ms; 0 follows the topic until Ctrl-C "
                              "(default 10000; with --group: follow)")
    consume.add_argument("--group", default=None, metavar="G", type=group_id,
                         help="consume as a member of consumer group G: the group shares the partitions, the "
                              "start is the group's committed offset, and positions are committed as it goes")
    consume.add_argument("--print-offset", dest="print_offset", action="store_true",
                         help="print partition:offset:key:value")
    consume.add_argument("--property", dest="properties", action="append", default=[], metavar="NAME=VALUE",
                         help="a property of kafka-console-consumer's formatter (repeatable): "
                              + ", ".join(FORMATTER_PROPERTIES) + "; e.g. print.key=true prints KEY<tab>VALUE")
    add_dir_and_bootstrap(consume)
    consume.set_defaults(func=cmd_consume)


def _add_exclude_internal(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--exclude-internal", dest="exclude_internal", action="store_true",
                        help="leave out internal topics (names starting with __, such as __consumer_offsets)")


# ---------------------------------------------------------------- argument types

def _positive(text: str) -> int:
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _election_type(text: str) -> str:
    if text.upper() not in ("PREFERRED", "UNCLEAN"):
        raise argparse.ArgumentTypeError(f"expected PREFERRED or UNCLEAN, got {text!r}")
    return text.upper()


def _non_negative(text: str) -> int:
    value = whole_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def parse_configs(items: list[str]) -> dict[str, str]:
    """``["k=v", ...]`` -> dict; a ClientError for an item without ``=``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ClientError(f"--config expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """kafka-topics' ``--replica-assignment``: ``1:2,2:3`` -> ``{0: [1, 2], 1: [2, 3]}``."""
    out: dict[int, list[int]] = {}
    for p, part in enumerate(text.split(",")):
        try:
            brokers = [int(b) for b in part.split(":")]
        except ValueError:
            raise ClientError(f"--replica-assignment expects broker ids like 1:2,2:3, got {text!r}") from None
        if len(set(brokers)) != len(brokers):
            raise ClientError(f"--replica-assignment: partition {p} lists a broker twice ({part})")
        out[p] = brokers
    if len({len(b) for b in out.values()}) != 1:
        raise ClientError(f"--replica-assignment: every partition needs the same number of replicas ({text})")
    return out


# ---------------------------------------------------------------- topics

def cmd_topics_create(args: argparse.Namespace) -> int:
    from ..client.sync import Admin
    from ..errors import TopicAlreadyExistsError

    configs = parse_configs(args.config)
    assignment = None
    if args.replica_assignment is not None:
        if args.partitions is not None or args.replication_factor is not None:
            raise ClientError("--replica-assignment replaces --partitions and --replication-factor: give one or the other")
        assignment = parse_replica_assignment(args.replica_assignment)
        partitions, rf = len(assignment), len(assignment[0])
    else:  # -1: the broker's num.partitions / default.replication.factor, as kafka-topics
        partitions = -1 if args.partitions is None else args.partitions
        rf = -1 if args.replication_factor is None else args.replication_factor
    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        try:
            admin.create_topic(args.name, partitions, rf, config=configs, assignment=assignment)
        except TopicAlreadyExistsError:
            if not args.if_not_exists:
                raise
            return 0
    print(f"Created topic {args.name}.")
    return 0


def cmd_topics_list(args: argparse.Namespace) -> int:
    from ..client.sync import Admin

    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        names = admin.list_topics()
    for name in sorted(names, key=internal_last):
        if not (args.exclude_internal and is_internal_topic(name)):
            print(name)
    return 0


def internal_last(name: str) -> tuple[bool, str]:
    """Sort key: topics by name, internal topics (``__consumer_offsets``) after the others."""
    return is_internal_topic(name), name


def topic_or_pattern(text: str) -> str:
    """argparse type for ``topics describe``'s NAME: a topic name, or a pattern of names
    with the shell's * ? and [...] (characters no topic name has)."""
    if is_pattern(text):
        if len(text) > 249 or not re.fullmatch(r"[a-zA-Z0-9._*?\[\]!-]+", text):
            raise argparse.ArgumentTypeError(f"topic pattern {text!r} is illegal: use the characters of topic "
                                             f"names with * ? and [...]")
        return text
    return topic_name(text)


def is_pattern(text: str | None) -> bool:
    return text is not None and any(c in text for c in "*?[")


# the reports of ``topics describe``: flag -> whether a partition belongs in it, from the
# partition, the live broker ids and its topic's min.insync.replicas (None: not known)
REPORTS = {
    "under_replicated": lambda p, live, min_isr: len(p.isr) < len(p.replicas),
    "unavailable": lambda p, live, min_isr: p.leader < 0 or p.leader not in live,
    "under_min_isr": lambda p, live, min_isr: min_isr is not None and len(p.isr) < min_isr,
    "at_min_isr": lambda p, live, min_isr: min_isr is not None and len(p.isr) == min_isr,
}


def _reports(args: argparse.Namespace) -> list[str]:
    return [r for r in REPORTS if getattr(args, r, False)]


def _check_describe_flags(args: argparse.Namespace) -> None:
    reports = _reports(args)
    if getattr(args, "summary", False) and reports:
        raise ClientError(f"--summary cannot be combined with --{reports[0].replace('_', '-')}-partitions: "
                          f"the summary counts every kind of problem")
    if getattr(args, "summary", False) and args.json:
        raise ClientError("--summary and --json cannot be combined: --json prints every partition")


def _min_isrs(admin: Any, descs: list[Any]) -> dict[str, int | None]:
    """Each topic's effective min.insync.replicas (None when the broker did not say)."""
    out: dict[str, int | None] = {}
    for d in descs:
        value = admin.describe_configs(d.name).get("min.insync.replicas", (None, ""))[0]
        try:
            out[d.name] = int(value) if value is not None else None
        except ValueError:
            out[d.name] = None
    return out


class Described:
    """What ``topics describe`` shows: the topics (internal ones last), and for --summary
    and the reports the live brokers and each topic's min.insync.replicas."""

    def __init__(self, descs: list[Any], live: set[int] | None = None,
                 min_isrs: dict[str, int | None] | None = None) -> None:
        self.descs = descs
        self.live = live if live is not None else set()
        self.min_isrs = min_isrs or {}

    def reported(self, reports: list[str]) -> list[Any]:
        """The topics with only their partitions that are in one of ``reports`` (every
        partition without reports); topics left with none are left out."""
        from dataclasses import replace

        if not reports:
            return self.descs
        out = []
        for d in self.descs:
            min_isr = self.min_isrs.get(d.name)
            parts = [p for p in d.partitions if any(REPORTS[r](p, self.live, min_isr) for r in reports)]
            if parts:
                out.append(replace(d, partitions=parts))
        return out

    def summary_rows(self) -> list[dict]:
        rows = []
        for d in self.descs:
            min_isr = self.min_isrs.get(d.name)
            leaders: dict[int, int] = {}
            for p in d.partitions:
                if p.leader >= 0 and p.leader in self.live:
                    leaders[p.leader] = leaders.get(p.leader, 0) + 1
            rows.append({
                "topic": d.name, "partitions": len(d.partitions), "replication_factor": d.replication_factor,
                "offline": sum(1 for p in d.partitions if REPORTS["unavailable"](p, self.live, min_isr)),
                "under_replicated": sum(1 for p in d.partitions if REPORTS["under_replicated"](p, self.live, min_isr)),
                "under_min_isr": (sum(1 for p in d.partitions if REPORTS["under_min_isr"](p, self.live, min_isr))
                                  if min_isr is not None else None),
                "leaders": dict(sorted(leaders.items())),
            })
        return rows


def _described(args: argparse.Namespace, admin: Any) -> Described:
    """The topics ``topics describe`` shows: those NAME names or matches, internal ones
    last, or not at all with --exclude-internal; the live brokers and min.insync.replicas
    when --summary or a report needs them."""
    _check_describe_flags(args)
    if is_pattern(args.name):
        names = [n for n in admin.list_topics() if fnmatch.fnmatchcase(n, args.name)]
        names = [n for n in names if not (args.exclude_internal and is_internal_topic(n))]
        descs = admin.describe_topics(names, checksums=args.json) if names else []
    else:
        descs = admin.describe_topics(None if args.name is None else [args.name], checksums=args.json)
    descs = sorted(descs, key=lambda d: internal_last(d.name))
    descs = [d for d in descs if not (args.exclude_internal and is_internal_topic(d.name))]
    reports = _reports(args)
    summary = getattr(args, "summary", False)
    if not reports and not summary:
        return Described(descs)
    live = {b.id for b in admin.cluster().brokers}
    needs_min_isr = summary or "under_min_isr" in reports or "at_min_isr" in reports
    return Described(descs, live, _min_isrs(admin, descs) if needs_min_isr else None)


def format_summary(rows: list[dict]) -> list[str]:
    """``topics describe --summary``: a line per topic, then the totals."""
    lines = []
    for r in rows:
        umi = "?" if r["under_min_isr"] is None else r["under_min_isr"]
        leaders = ",".join(f"{b}={n}" for b, n in r["leaders"].items()) or "none"
        lines.append(f"Topic: {r['topic']}\tPartitionCount: {r['partitions']}\tReplicationFactor: "
                     f"{r['replication_factor']}\tOffline: {r['offline']}\tUnderReplicated: {r['under_replicated']}"
                     f"\tUnderMinIsr: {umi}\tLeaders: {leaders}")
    total = {k: sum(r[k] or 0 for r in rows) for k in ("partitions", "offline", "under_replicated", "under_min_isr")}
    lines.append(f"Total: {len(rows)} topic{'s' if len(rows) != 1 else ''}\tPartitionCount: {total['partitions']}"
                 f"\tOffline: {total['offline']}\tUnderReplicated: {total['under_replicated']}"
                 f"\tUnderMinIsr: {total['under_min_isr']}")
    return lines


def lso_behind(p: Any) -> bool:
    """True when a partition's last stable offset is known and below its high watermark
    (a transaction is open on it: read_committed consumers stop at the LSO)."""
    return 0 <= p.last_stable_offset < p.high_watermark


def format_topic(desc: Any, header: bool = True) -> list[str]:
    """kafka-topics style lines for one TopicDescription: a header (not with a report such
    as --under-replicated-partitions, as in Kafka), then one line per partition
    (``LastStableOffset`` only where an open transaction holds it below the HW)."""
    lines = [f"Topic: {desc.name}\tTopicId: {desc.topic_id}\tPartitionCount: {len(desc.partitions)}"
             f"\tReplicationFactor: {desc.replication_factor}"] if header else []
    for p in desc.partitions:
        leos = ",".join(f"{b}={p.replica_leos.get(b, -1)}" for b in p.replicas)
        lines.append(
            f"Topic: {p.topic}\tPartition: {p.partition}\tLeader: {p.leader}"
            f"\tReplicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}\tLeaderEpoch: {p.leader_epoch}"
            + (f"\tLogStartOffset: {p.log_start_offset}" if p.log_start_offset > 0 else "")
            + f"\tHighWatermark: {p.high_watermark}"
            + (f"\tLastStableOffset: {p.last_stable_offset}" if lso_behind(p) else "")
            + f"\tLEO: {leos}"
        )
    return lines


def _ids(ids: Any) -> str:
    return ",".join(str(i) for i in ids)


def cmd_topics_describe(args: argparse.Namespace) -> int:
    from ..client.sync import Admin

    _check_describe_flags(args)
    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        described = _described(args, admin)
    if args.summary:
        for line in format_summary(described.summary_rows()):
            print(line)
        return 0
    reports = _reports(args)
    descs = described.reported(reports)
    if args.json:
        print(json.dumps({"topics": [d.to_dict() for d in descs]}, indent=2))
        return 0
    for desc in descs:
        for line in format_topic(desc, header=not reports):
            print(line)
    return 0


def topics_view(descs: list[Any]) -> watch.View:
    """``topics describe --watch``: one row per partition (-1: not known, see docs/tutorial.md);
    an LSO column after HW while an open transaction holds some partition's LSO below its HW."""
    columns = [watch.Column("TOPIC", ratio=1, min_width=5), watch.Column("P", justify="right"),
               watch.Column("LEADER", justify="right"), watch.Column("REPLICAS"), watch.Column("ISR"), watch.Column("EPOCH", justify="right")]
    with_start = any(p.log_start_offset > 0 for d in descs for p in d.partitions)
    if with_start:
        columns.append(watch.Column("START", justify="right"))
    columns.append(watch.Column("HW", justify="right"))
    with_lso = any(lso_behind(p) for d in descs for p in d.partitions)
    if with_lso:
        columns.append(watch.Column("LSO", justify="right"))
    columns.append(watch.Column("LEO", ratio=1, min_width=6, wrap=True))
    rows = []
    under = 0
    for d in descs:
        for p in d.partitions:
            under += len(p.isr) < len(p.replicas)
            cells = [d.name, str(p.partition), str(p.leader), _ids(p.replicas), _ids(p.isr), str(p.leader_epoch)]
            if with_start:
                cells.append(str(p.log_start_offset))
            cells.append(str(p.high_watermark))
            if with_lso:
                cells.append(str(p.last_stable_offset))
            cells += [" ".join(f"{b}={p.replica_leos.get(b, -1)}" for b in p.replicas)]
            rows.append(((d.name, p.partition), tuple(cells)))
    partitions = len(rows)
    title = (f"{len(descs)} topic{'s' if len(descs) != 1 else ''}, {partitions} partition"
             f"{'s' if partitions != 1 else ''}, {under} under-replicated")
    if with_lso:
        held = sum(1 for d in descs for p in d.partitions if lso_behind(p))
        title += f", {held} with an open transaction (LSO below HW)"
    return watch.View([watch.Grid("partitions", columns, rows, title=title, empty="no topics")])


def _topics_describe_view(args: argparse.Namespace) -> tuple[watch.View, dict]:
    from ..client.sync import Admin

    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        described = _described(args, admin)
    if getattr(args, "summary", False):
        rows = described.summary_rows()
        return summary_view(rows), {"topics": rows}
    descs = described.reported(_reports(args))
    return topics_view(descs), {"topics": [d.to_dict() for d in descs]}


def summary_view(rows: list[dict]) -> watch.View:
    """``topics describe --summary --watch``: one row per topic."""
    columns = [watch.Column("TOPIC", ratio=1, min_width=5), watch.Column("PARTITIONS", justify="right"),
               watch.Column("RF", justify="right"), watch.Column("OFFLINE", justify="right"),
               watch.Column("UNDER-REPLICATED", justify="right"), watch.Column("UNDER-MIN-ISR", justify="right"),
               watch.Column("LEADERS", ratio=1, min_width=6, wrap=True)]
    cells = [((r["topic"],), (r["topic"], str(r["partitions"]), str(r["replication_factor"]), str(r["offline"]),
                              str(r["under_replicated"]), "?" if r["under_min_isr"] is None else str(r["under_min_isr"]),
                              " ".join(f"{b}={n}" for b, n in r["leaders"].items()) or "none")) for r in rows]
    partitions = sum(r["partitions"] for r in rows)
    title = (f"{len(rows)} topic{'s' if len(rows) != 1 else ''}, {partitions} partition{'s' if partitions != 1 else ''}, "
             f"{sum(r['offline'] for r in rows)} offline, {sum(r['under_replicated'] for r in rows)} under-replicated")
    return watch.View([watch.Grid("topics", columns, cells, title=title, empty="no topics")])


def cmd_topics_elect_leaders(args: argparse.Namespace) -> int:
    from ..client.sync import Admin
    from ..client.types import TopicPartition
    from ..errors import ElectionNotNeededError

    if args.partition is not None and args.topic is None:
        raise ClientError("--partition needs --topic")
    if args.all_topic_partitions and args.topic is not None:
        raise ClientError("--all-topic-partitions and --topic cannot be combined")
    unclean = args.election_type == "UNCLEAN"
    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        tps = None
        if args.topic is not None:
            (desc,) = admin.describe_topics([args.topic])
            ids = [p.partition for p in desc.partitions]
            if args.partition is not None and args.partition not in ids:
                raise ClientError(f"topic {args.topic!r} has no partition {args.partition}")
            tps = [TopicPartition(args.topic, p) for p in ids if args.partition in (None, p)]
        results = admin.elect_leaders(tps, election_type=args.election_type.lower())
    failed = 0
    for tp, exc in sorted(results.items()):
        if exc is None:
            print(f"{tp}: {'leader elected (unclean)' if unclean else 'preferred leader elected'}")
        elif isinstance(exc, ElectionNotNeededError):
            print(f"{tp}: {'already has a leader' if unclean else 'already led by its preferred replica'}")
        else:
            failed += 1
            print(f"{tp}: {exc.code.name}: {exc.message}")
    if not results:
        print("every partition already has a leader" if unclean
              else "every partition is already led by its preferred replica")
    return 1 if failed else 0


def cmd_topics_alter(args: argparse.Namespace) -> int:
    from ..client.sync import Admin

    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        added = admin.create_partitions(args.name, args.partitions)
    print(f"Topic {args.name} now has {args.partitions} partitions (added {', '.join(map(str, added))}).")
    return 0


def cmd_configs_describe(args: argparse.Namespace) -> int:
    from ..client.sync import Admin

    if args.broker is not None:
        with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
            settings = admin.describe_broker_configs(args.broker)
        dynamic = [f"{k}={v}" for k, (v, src, _) in sorted(settings.items()) if src.startswith("dynamic")]
        print(f"Broker: {args.broker}\tDynamic: {','.join(dynamic) or '(none)'}")
        for name, (value, source, read_only) in sorted(settings.items()):
            if args.all or source.startswith("dynamic"):
                print(f"  {name}={'' if value is None else value}\t({source}{', read-only' if read_only else ''})")
        return 0
    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        configs = admin.describe_configs(args.topic)
    overrides = [f"{k}={v}" for k, (v, src) in sorted(configs.items()) if src == "topic"]
    print(f"Topic: {args.topic}\tOverrides: {','.join(overrides) or '(none)'}")
    for name, (value, source) in sorted(configs.items()):
        if args.all or source == "topic":
            print(f"  {name}={'' if value is None else value}\t({source})")
    return 0


def cmd_configs_alter(args: argparse.Namespace) -> int:
    from ..client.sync import Admin

    pairs = [p for item in args.add_config for p in item.split(",") if p.strip()]
    to_set = parse_configs(pairs)
    to_delete = [k.strip() for item in args.delete_config for k in item.split(",") if k.strip()]
    if not to_set and not to_delete:
        raise ClientError("give --add-config K=V and/or --delete-config K")
    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        if args.topic is not None:
            admin.alter_configs(args.topic, set=to_set, delete=to_delete)
        else:
            admin.alter_broker_configs(args.broker, set=to_set, delete=to_delete)
    if args.topic is not None:
        print(f"Completed updating config for topic {args.topic}.")
    elif args.broker is not None:
        print(f"Completed updating config for broker {args.broker}.")
    else:
        print("Completed updating default config for brokers in the cluster.")
    return 0


def cmd_topics_delete(args: argparse.Namespace) -> int:
    from ..client.sync import Admin

    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        admin.delete_topic(args.name)
    print(f"Deleted topic {args.name}.")
    return 0


def read_offset_json(path: str) -> dict[Any, int]:
    """kafka-delete-records' --offset-json-file: ``{"partitions": [{"topic", "partition",
    "offset"}], "version": 1}`` -> ``{TopicPartition: offset}``; a bad file is one ClientError."""
    from ..client.types import TopicPartition

    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as exc:
        raise ClientError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ClientError(f"{path} is not JSON: {exc}") from None
    entries = doc.get("partitions") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ClientError(f'{path}: expected {{"partitions": [{{"topic": ..., "partition": ..., "offset": ...}}], '
                          f'"version": 1}} with at least one partition')
    out: dict[Any, int] = {}
    for e in entries:
        ok = isinstance(e, dict) and isinstance(e.get("topic"), str) and e["topic"] \
            and all(isinstance(e.get(k), int) and not isinstance(e.get(k), bool) for k in ("partition", "offset"))
        if not ok or e["partition"] < 0 or e["offset"] < -1:
            raise ClientError(f"{path}: each partition needs a topic, a partition >= 0 and an offset >= -1, "
                              f"got {json.dumps(e)}")
        tp = TopicPartition(e["topic"], e["partition"])
        if tp in out:
            raise ClientError(f"{path}: partition {tp} appears more than once")
        out[tp] = e["offset"]
    return out


def cmd_topics_delete_records(args: argparse.Namespace) -> int:
    from ..client.sync import Admin

    offsets = read_offset_json(args.offset_json_file)
    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        results = admin.delete_records(offsets)
    print("Records delete operation completed:")
    failed = 0
    for tp, res in sorted(results.items()):
        if isinstance(res, int):
            print(f"partition: {tp}\tlow_watermark: {res}")
        else:
            failed += 1
            print(f"partition: {tp}\terror: {res.code.name}: {res.message}")
    return 1 if failed else 0


def cmd_topics_reassign(args: argparse.Namespace) -> int:
    from ..client.sync import Admin
    from ..client.types import TopicPartition

    try:
        replicas = [int(b) for b in args.replicas.split(",") if b.strip()]
    except ValueError:
        raise ClientError(f"--replicas expects broker ids separated by commas, got {args.replicas!r}") from None
    tp = TopicPartition(args.topic, args.partition)
    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        exc = admin.alter_partition_reassignments({tp: replicas}).get(tp)
    if exc is not None:
        raise exc
    print(f"Reassignment of {tp} to replicas {_ids(replicas)} started; "
          f"follow it with `minikafka topics describe {args.topic}`.")
    return 0


# ---------------------------------------------------------------- produce

def _strip_newline(line: bytes) -> bytes:
    if line.endswith(b"\n"):
        line = line[:-1]
        if line.endswith(b"\r"):
            line = line[:-1]
    return line


# kafka-console-producer's --property names for its LineMessageReader, and defaults
READER_PROPERTIES = {"parse.key": "false", "key.separator": "\t", "null.marker": None, "ignore.error": "false"}


def line_reader(items: list[str], key_separator: str | None = None,
                null_marker: str | None = None) -> tuple[bytes | None, bytes | None, bool]:
    """``--property NAME=VALUE`` items (kafka-console-producer's: parse.key, key.separator,
    null.marker, ignore.error) with ``--key-separator`` and ``--null-marker`` -> (the key
    separator, None when lines carry no key; the null marker; whether a line without the
    separator is sent whole as a value without a key instead of being an error).
    ``--key-separator SEP`` is ``parse.key=true key.separator=SEP``.  A ClientError for an
    unknown name, a parse.key/ignore.error value other than true/false or an empty separator."""
    props = dict(READER_PROPERTIES)
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in READER_PROPERTIES:
            raise ClientError(f"--property expects NAME=VALUE with NAME one of {', '.join(READER_PROPERTIES)} "
                              f"(kafka-console-producer's line reader), got {item!r}")
        if name in ("parse.key", "ignore.error") and value.strip().lower() not in ("true", "false"):
            raise ClientError(f"--property {name} expects true or false, got {value!r}")
        props[name] = value.strip().lower() if name in ("parse.key", "ignore.error") else value
    if key_separator is not None:
        props["parse.key"], props["key.separator"] = "true", key_separator
    if null_marker is not None:
        props["null.marker"] = null_marker
    for escaped, char in {"\\t": "\t", "\\n": "\n", "\\r": "\r"}.items():
        props["key.separator"] = props["key.separator"].replace(escaped, char)
    if props["parse.key"] == "true" and not props["key.separator"]:
        raise ClientError("the key separator must not be empty")
    separator = props["key.separator"].encode("utf-8") if props["parse.key"] == "true" else None
    marker = None if props["null.marker"] is None else props["null.marker"].encode("utf-8")
    return separator, marker, props["ignore.error"] == "true"


def cmd_produce(args: argparse.Namespace) -> int:
    from ..client.sync import Producer

    if args.key_separator == "":
        raise ClientError("--key-separator must not be empty")
    separator, null_marker, ignore_error = line_reader(args.properties, args.key_separator, args.null_marker)
    shown_separator = separator.decode("utf-8") if separator is not None else ""
    lock = threading.Lock()
    failures: list[BaseException] = []
    sent = 0

    def on_done(fut: Any) -> None:
        exc = fut.exception()
        if exc is not None:
            with lock:
                failures.append(exc)

    producer = Producer(resolve_bootstrap(args), **client_options(args), acks=args.acks, delivery_timeout_ms=args.delivery_timeout_ms,
                        request_timeout_ms=min(30000, args.delivery_timeout_ms),
                        compression_type=getattr(args, "compression_type", "none"),
                        enable_idempotence=args.idempotence and args.acks in ("all", "-1"))
    try:
        partitions = producer.partitions_for(args.topic)
        if args.partition is not None and args.partition not in partitions:
            raise ClientError(f"topic {args.topic!r} has no partition {args.partition} "
                              f"(partitions 0..{max(partitions)})")
        stdin = sys.stdin.buffer
        for number, raw in enumerate(stdin, 1):
            line = _strip_newline(raw)
            key = None
            if separator is not None:
                key, sep, value = line.partition(separator)
                if not sep:
                    if not ignore_error:
                        raise ClientError(f"line {number} has no key separator {shown_separator!r}")
                    key, value = None, line  # ignore.error=true: the whole line, without a key
            else:
                value = line
            if null_marker is not None and value == null_marker:
                value = None
            producer.send(args.topic, value, key=key, partition=args.partition).add_done_callback(on_done)
            sent += 1
        producer.flush()
    finally:
        producer.close()
    if failures:
        print(f"minikafka: error: {len(failures)} of {sent} records failed; first error: {failures[0]}",
              file=sys.stderr, flush=True)
        return 1
    return 0


# ---------------------------------------------------------------- consume

def _show(data: bytes | None) -> bytes:
    return b"null" if data is None else data


# kafka-console-consumer's --property names for its DefaultMessageFormatter, and defaults
FORMATTER_PROPERTIES = {
    "print.timestamp": "false", "print.key": "false", "print.offset": "false", "print.partition": "false",
    "print.headers": "false", "print.value": "true", "key.separator": "\t", "line.separator": "\n",
    "headers.separator": ",", "null.literal": "null",
}


def record_formatter(items: list[str]) -> Any:
    """``--property NAME=VALUE`` items -> a function ``record -> bytes`` that writes a record
    as kafka-console-consumer's DefaultMessageFormatter does: the chosen fields of
    ``[CreateTime:TS] [Partition:P] [Offset:O] [HEADERS] [KEY] [VALUE]`` separated by
    key.separator and ended by line.separator.  A ClientError for an unknown name or a
    print.* value other than true/false."""
    props = {"key.separator": "\t", "line.separator": "\n", "headers.separator": ",", "null.literal": "null"}
    flags = {k: v == "true" for k, v in FORMATTER_PROPERTIES.items() if k.startswith("print.")}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in FORMATTER_PROPERTIES:
            raise ClientError(f"--property expects NAME=VALUE with NAME one of {', '.join(FORMATTER_PROPERTIES)}, "
                              f"got {item!r}")
        if name.startswith("print."):
            if value.strip().lower() not in ("true", "false"):
                raise ClientError(f"--property {name} expects true or false, got {value!r}")
            flags[name] = value.strip().lower() == "true"
        else:
            props[name] = value
    unescape = {"\\t": "\t", "\\n": "\n", "\\r": "\r"}

    def text(name: str) -> bytes:
        value = props[name]
        for escaped, char in unescape.items():
            value = value.replace(escaped, char)
        return value.encode("utf-8")

    key_sep, line_sep, headers_sep, null = (text("key.separator"), text("line.separator"),
                                            text("headers.separator"), text("null.literal"))
    order = ("print.timestamp", "print.partition", "print.offset", "print.headers", "print.key", "print.value")
    shown = [f for f in order if flags[f]]

    def field(name: str, r: Any) -> bytes:
        if name == "print.timestamp":
            return b"NO_TIMESTAMP" if r.timestamp < 0 else f"{r.timestamp_type}:{r.timestamp}".encode()
        if name == "print.partition":
            return b"Partition:%d" % r.partition
        if name == "print.offset":
            return b"Offset:%d" % r.offset
        if name == "print.headers":
            if not r.headers:
                return b"NO_HEADERS"
            return headers_sep.join(k.encode("utf-8") + b":" + (null if v is None else v) for k, v in r.headers)
        data = r.key if name == "print.key" else r.value
        return null if data is None else data

    def write(r: Any) -> bytes:
        return key_sep.join(field(f, r) for f in shown) + (line_sep if shown else b"")

    return write


def cmd_consume(args: argparse.Namespace) -> int:
    from ..client.sync import Consumer
    from ..client.types import TopicPartition

    # Ctrl-C ends following a topic even when this process was started with SIGINT
    # ignored (a background job of a non-interactive shell inherits that)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    reset = "earliest" if args.from_beginning else "latest"
    start = None
    if args.offset is not None:
        if args.partition is None or args.group is not None:
            raise ClientError("--offset needs --partition (and no --group)")
        if args.offset not in ("earliest", "latest"):
            try:
                start = int(args.offset)
            except ValueError:
                start = -1
            if start < 0:
                raise ClientError(f"--offset expects a non-negative offset, earliest or latest, got {args.offset!r}")
    record_formatter(args.properties)  # a bad --property is refused before connecting
    if args.properties and args.print_offset:
        raise ClientError("--print-offset and --property cannot be combined: use --property print.partition=true "
                          "--property print.offset=true --property print.key=true")
    if args.group is not None:
        return _consume_in_group(args, reset)
    signal.signal(signal.SIGTERM, _interrupt)  # like Ctrl-C: print the summary line
    consumer = Consumer(resolve_bootstrap(args), **client_options(args), auto_offset_reset=reset)
    count = 0
    timeout_ms = 10000 if args.timeout_ms is None else (args.timeout_ms or None)
    try:
        partitions = consumer.partitions_for_topic(args.topic)
        if args.partition is not None:
            if args.partition not in partitions:
                raise ClientError(f"topic {args.topic!r} has no partition {args.partition} "
                                  f"(partitions 0..{max(partitions)})")
            partitions = {args.partition}
        tps = [TopicPartition(args.topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        if start is not None:
            consumer.seek(tps[0], start)
        elif args.from_beginning or args.offset == "earliest":
            consumer.seek_to_beginning(*tps)
        else:
            for tp in tps:  # fix the start now, so records produced from here on are seen
                consumer.position(tp)
        count = _print_records(consumer, args, timeout_ms)
    finally:
        consumer.close()
    print(f"Processed a total of {count} messages", file=sys.stderr, flush=True)
    return 0


class _StopOnSignal:
    """Ctrl-C and SIGTERM while records are printed: the first one cuts the consumer's
    poll short (``wakeup``) and lets the records already handed out be printed, so
    every record counted was printed and every record printed is counted (and, in a
    group, committed); a second one interrupts at once."""

    def __init__(self, consumer: Any) -> None:
        self.consumer = consumer
        self.requested = False
        self._old: dict[int, Any] = {}

    def __enter__(self) -> "_StopOnSignal":
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.consumer.wakeup()


def _print_records(consumer: Any, args: argparse.Namespace, timeout_ms: int | None) -> int:
    """Poll and print until --max-messages, ``timeout_ms`` without a record (None: no
    limit) or Ctrl-C / SIGTERM.  Returns the number printed."""
    from ..errors import WakeupError

    out = sys.stdout.buffer
    formatted = record_formatter(args.properties) if getattr(args, "properties", None) else None
    count = 0
    last = time.monotonic()
    with _StopOnSignal(consumer) as stop:
        try:
            while not stop.requested and (args.max_messages is None or count < args.max_messages):
                remaining = 1.0 if timeout_ms is None else timeout_ms / 1000 - (time.monotonic() - last)
                if remaining <= 0:
                    break
                left = None if args.max_messages is None else args.max_messages - count
                try:
                    records = consumer.poll(timeout_ms=max(1, int(min(remaining, 1.0) * 1000)), max_records=left)
                except WakeupError:
                    break
                if not records:
                    continue
                last = time.monotonic()
                for r in records:
                    if formatted is not None:
                        out.write(formatted(r))
                    elif args.print_offset:
                        out.write(b"%d:%d:%s:%s\n" % (r.partition, r.offset, _show(r.key), _show(r.value)))
                    else:
                        out.write(_show(r.value) + b"\n")
                    count += 1
                out.flush()
        except KeyboardInterrupt:  # a second Ctrl-C: stop where we are
            pass
        try:
            out.flush()
        except (KeyboardInterrupt, OSError):
            pass
    return count


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _consume_in_group(args: argparse.Namespace, reset: str) -> int:
    """kafka-console-consumer --group: subscribe, print, commit as it goes and on exit."""
    from ..client.sync import Consumer

    if args.partition is not None:
        raise ClientError("--partition and --group cannot be combined: the group assigns the partitions")
    signal.signal(signal.SIGTERM, _interrupt)  # like Ctrl-C: commit and leave the group
    consumer = Consumer(resolve_bootstrap(args), **client_options(args), group_id=args.group, auto_offset_reset=reset,
                        client_id="minikafka-console-consumer")
    count = 0
    try:
        consumer.partitions_for_topic(args.topic)  # UNKNOWN_TOPIC_OR_PARTITION now, not a silent wait
        consumer.subscribe([args.topic])
        count = _print_records(consumer, args, args.timeout_ms or None)
    finally:
        consumer.close()  # commits the positions and leaves the group
    print(f"Processed a total of {count} messages", file=sys.stderr, flush=True)
    return 0
