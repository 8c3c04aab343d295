"""``minikafka groups``: list, describe, reset offsets of and delete consumer groups,
with kafka-consumer-groups' columns and words."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import ClientError
from . import offset_resets, watch
from .command_config import client_options
from .common import add_dir_and_bootstrap, add_named, group_id, resolve_bootstrap, topic_name, whole_number

COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    """Register ``groups list|describe|reset-offsets|delete``."""
    groups = subparsers.add_parser("groups", help="list, describe, reset and delete consumer groups",
                                   description="Consumer groups, as kafka-consumer-groups shows them.")
    gsub = groups.add_subparsers(dest="groups_command", metavar="COMMAND", required=True)
    lst = gsub.add_parser("list", help="list group ids", description="Print every group id, one per line.")
    add_dir_and_bootstrap(lst)
    lst.set_defaults(func=cmd_groups_list)

    describe = gsub.add_parser(
        "describe", help="members, assignment, committed offsets and lag of a group",
        description="State, generation, assignor, coordinator and group leader, then one line per partition: "
                    "committed offset, log end offset (high watermark), lag and the member that owns it.")
    add_named(describe, "group", "group", "GROUP", group_id, "the group id")
    describe.add_argument("--json", action="store_true", help="print one JSON object")
    add_dir_and_bootstrap(describe)
    watch.add_flags(describe)
    describe.set_defaults(func=watch.watchable(cmd_groups_describe, "minikafka groups describe", _group_view))
    _add_reset_offsets_parser(gsub)

    delete = gsub.add_parser("delete", help="delete an empty group and its committed offsets",
                             description="Delete a consumer group that has no active members, with its "
                                         "committed offsets, as kafka-consumer-groups --delete does. A group "
                                         "with members is refused (NON_EMPTY_GROUP), an unknown one too "
                                         "(GROUP_ID_NOT_FOUND, in the words of `groups describe`).")
    add_named(delete, "group", "group", "GROUP", group_id, "the group id")
    add_dir_and_bootstrap(delete)
    delete.set_defaults(func=cmd_groups_delete)


def _add_reset_offsets_parser(gsub: argparse._SubParsersAction) -> None:
    """``groups reset-offsets``: which partitions (--topic, --all-topics), to where (--to-...),
    and whether to commit (--execute)."""
    reset = gsub.add_parser(
        "reset-offsets", help="plan or (with --execute) move a group's committed offsets",
        description="Set the committed offsets of a group's partitions, as kafka-consumer-groups "
                    "--reset-offsets does: without --execute it is a dry run that prints the new offsets and "
                    "changes nothing. Refused while the group has active members (state other than Empty). "
                    "A group that does not exist yet gets these committed offsets with --execute, as in Kafka. "
                    "--to-offset and --shift-by stay within the log start and the high watermark; "
                    "--to-datetime and --by-duration take the first offset whose record timestamp is at or "
                    "after the time (the high watermark where no record is that recent).")
    add_named(reset, "group", "group", "GROUP", group_id, "the group id")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", action="append", default=None, metavar="TOPIC[:P,P...]",
                       help="a topic whose partitions move, or only the listed ones (t:0,1); repeatable")
    scope.add_argument("--all-topics", dest="all_topics", action="store_true",
                       help="every partition the group has a committed offset for")
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", dest="to_earliest", action="store_true", help="the log start offset")
    to.add_argument("--to-latest", dest="to_latest", action="store_true", help="the high watermark")
    to.add_argument("--to-current", dest="to_current", action="store_true",
                    help="the committed offset (the high watermark where there is none)")
    to.add_argument("--to-offset", dest="to_offset", type=whole_number, default=None, metavar="N",
                    help="offset N (kept within the log start and the high watermark)")
    to.add_argument("--shift-by", dest="shift_by", type=whole_number, default=None, metavar="N",
                    help="the committed offset plus N (negative: back), kept within the log start and the "
                         "high watermark")
    to.add_argument("--to-datetime", dest="to_datetime", default=None, metavar="YYYY-MM-DDTHH:mm:SS.sss",
                    help="the first record at or after this time (local time unless a zone such as Z follows)")
    to.add_argument("--by-duration", dest="by_duration", default=None, metavar="PnDTnHnMnS",
                    help="the first record at or after now minus this ISO-8601 duration (e.g. PT1H, P1DT30M)")
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", dest="dry_run", action="store_true",
                      help="print the new offsets, change nothing (the default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    add_dir_and_bootstrap(reset)
    reset.set_defaults(func=cmd_groups_reset)


def unknown_group(group: str) -> str:
    """The one error line for a group that does not exist (``groups describe``, ``groups delete``):
    Kafka's error name, then kafka-consumer-groups' sentence."""
    return f"GROUP_ID_NOT_FOUND: Consumer group '{group}' does not exist."


def cmd_groups_list(args: argparse.Namespace) -> int:
    from ..client.sync import Admin

    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        for listed, _, _ in admin.list_groups():
            print(listed)
    return 0


def describe(admin: Any, consumer: Any, group_id: str) -> dict:
    """The ``--json`` form of a group: state, generation, protocol, leader, coordinator,
    members with their assignment, and per-partition offsets and lag."""
    g = admin.describe_group(group_id)
    committed = admin.list_group_offsets(group_id)
    owner = {tp: m for m in g.members for tp in m.assignment}
    tps = sorted(set(committed) | set(owner))
    ends = consumer.end_offsets(tps) if tps else {}
    offsets = []
    for tp in tps:
        cur, end = committed.get(tp), ends.get(tp)
        m = owner.get(tp)
        offsets.append({"topic": tp.topic, "partition": tp.partition, "current_offset": cur, "log_end_offset": end,
                        "lag": None if cur is None or end is None else max(0, end - cur),
                        "member_id": m.member_id if m else None, "host": m.host if m else None,
                        "client_id": m.client_id if m else None})
    return {"group": group_id, "state": g.state, "generation": g.generation, "protocol": g.protocol,
            "leader": g.leader or None, "coordinator": g.coordinator,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                         "host": m.host, "assignment": [{"topic": tp.topic, "partition": tp.partition}
                                                        for tp in m.assignment]} for m in g.members],
            "offsets": offsets}


def format_group(d: dict) -> list[str]:
    """kafka-consumer-groups --describe lines, after one line about the group itself (a group that
    exists: ``groups describe`` refuses a Dead one before formatting)."""
    def cell(v: Any) -> str:
        return "-" if v is None or v == "" else str(v)

    lines = [f"Group {d['group']}: state {d['state']}, generation {d['generation']}, assignor {cell(d['protocol'])}, "
             f"coordinator broker {d['coordinator']}, {len(d['members'])} members, group leader {cell(d['leader'])}"]
    rows = [COLUMNS] + [(d["group"], o["topic"], str(o["partition"]), cell(o["current_offset"]), cell(o["log_end_offset"]),
                         cell(o["lag"]), cell(o["member_id"]), cell(o["host"]), cell(o["client_id"])) for o in d["offsets"]]
    owned = {o["member_id"] for o in d["offsets"]}
    rows += [(d["group"], "-", "-", "-", "-", "-", m["member_id"], m["host"], m["client_id"])
             for m in d["members"] if m["member_id"] not in owned]
    return lines + table(rows)


def table(rows: list[tuple[str, ...]]) -> list[str]:
    """Rows as left-aligned columns two spaces apart (the first row is the header)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def group_view(d: dict) -> watch.View:
    """``groups describe --watch``: the group's state, then kafka-consumer-groups' columns."""
    def cell(v: Any) -> str:
        return "-" if v is None or v == "" else str(v)

    group = watch.Grid("group", [
        watch.Column("GROUP", ratio=2, min_width=5), watch.Column("STATE"), watch.Column("GENERATION", justify="right"),
        watch.Column("ASSIGNOR"), watch.Column("COORDINATOR", justify="right"), watch.Column("MEMBERS", justify="right"),
        watch.Column("GROUP LEADER", ratio=2, min_width=6, overflow="middle"),
    ], [("group", (d["group"], d["state"], str(d["generation"]), cell(d["protocol"]), str(d["coordinator"]),
                   str(len(d["members"])), cell(d["leader"])))])
    if d["state"] == "Dead":
        return watch.View([group], [f"Consumer group '{d['group']}' does not exist."])
    rows = [((o["topic"], o["partition"]), (o["topic"], str(o["partition"]), cell(o["current_offset"]),
                                            cell(o["log_end_offset"]), cell(o["lag"]), cell(o["member_id"]),
                                            cell(o["host"]), cell(o["client_id"]))) for o in d["offsets"]]
    owned = {o["member_id"] for o in d["offsets"]}
    rows += [(("member", m["member_id"]), ("-", "-", "-", "-", "-", m["member_id"], cell(m["host"]), cell(m["client_id"])))
             for m in d["members"] if m["member_id"] not in owned]
    offsets = watch.Grid("offsets", [
        watch.Column("TOPIC", ratio=2, min_width=5), watch.Column("PARTITION", justify="right"),
        watch.Column("CURRENT", justify="right"), watch.Column("LOG-END", justify="right"),
        watch.Column("LAG", justify="right"), watch.Column("CONSUMER-ID", ratio=3, min_width=6, overflow="middle"),
        watch.Column("HOST", ratio=1, min_width=4), watch.Column("CLIENT-ID", ratio=2, min_width=5),
    ], rows, empty="no committed offsets and no members")
    return watch.View([group, offsets])


def _group_view(args: argparse.Namespace) -> tuple[watch.View, dict]:
    from ..client.sync import Admin, Consumer

    bootstrap = resolve_bootstrap(args)
    with Admin(bootstrap, **client_options(args)) as admin, Consumer(bootstrap, **client_options(args)) as consumer:
        d = describe(admin, consumer, args.group)
    return group_view(d), d


def cmd_groups_describe(args: argparse.Namespace) -> int:
    from ..client.sync import Admin, Consumer

    bootstrap = resolve_bootstrap(args)
    with Admin(bootstrap, **client_options(args)) as admin, Consumer(bootstrap, **client_options(args)) as consumer:
        d = describe(admin, consumer, args.group)
    if args.json:
        print(json.dumps(d), flush=True)  # a group that does not exist: state Dead, as Kafka's Admin describes it
    elif d["state"] == "Dead":
        # kafka-consumer-groups' words; it prints them as "Error: ..." (and exits 0), ours is a one-line error
        raise ClientError(unknown_group(args.group))
    else:
        print("\n".join(format_group(d)), flush=True)
    return 0


def _topic_specs(args: argparse.Namespace) -> list[tuple[str, list[int] | None]]:
    """``--topic T[:P,P...]`` values as (topic, partitions or None), names checked by Kafka's rule."""
    specs = []
    for spec in args.topic or ():
        topic, wanted = offset_resets.parse_topic(spec)
        try:
            topic_name(topic)
        except argparse.ArgumentTypeError as exc:
            raise ClientError(f"--topic: {exc}") from None
        specs.append((topic, wanted))
    return specs


def _reset_partitions(specs: list[tuple[str, list[int] | None]], all_topics: bool, consumer: Any,
                      committed: dict) -> list[Any]:
    """The partitions ``--topic``/``--all-topics`` name (a ClientError for an unknown partition)."""
    from ..client.types import TopicPartition

    if all_topics:
        return sorted(committed)
    tps: list[Any] = []
    for topic, wanted in specs:
        have = sorted(consumer.partitions_for_topic(topic))
        unknown = [p for p in wanted or () if p not in have]
        if unknown:
            raise ClientError(f"topic {topic!r} has no partition {unknown[0]} (partitions 0..{max(have)})")
        tps += [TopicPartition(topic, p) for p in (wanted or have)]
    return sorted(set(tps))


def cmd_groups_reset(args: argparse.Namespace) -> int:
    import time

    from ..client.sync import Admin, Consumer

    kind, value = offset_resets.strategy(args)
    specs = _topic_specs(args)
    at_ms = None  # checked before any request
    if kind == "to_datetime":
        at_ms = offset_resets.parse_datetime(value)
    elif kind == "by_duration":
        at_ms = int(time.time() * 1000) - offset_resets.parse_duration(value)
    bootstrap = resolve_bootstrap(args)
    with Admin(bootstrap, **client_options(args)) as admin, Consumer(bootstrap, **client_options(args)) as consumer:
        g = admin.describe_group(args.group)
        if g.state not in ("Empty", "Dead") or g.members:
            # kafka-consumer-groups' words; its members would overwrite the new offsets
            raise ClientError(f"Assignments can only be reset if the group '{args.group}' is inactive, but the "
                              f"current state is {g.state} ({len(g.members)} active members): stop them first")
        committed = admin.list_group_offsets(args.group) if g.state != "Dead" else {}
        tps = _reset_partitions(specs, args.all_topics, consumer, committed)
        starts, ends = (consumer.beginning_offsets(tps), consumer.end_offsets(tps)) if tps else ({}, {})

        def by_time() -> dict:
            found = consumer.offsets_for_times({tp: max(0, at_ms or 0) for tp in tps})
            return {tp: None if f is None else f.offset for tp, f in found.items()}

        new = offset_resets.new_offsets(kind, value, tps, committed, starts, ends, by_time)
        if args.execute and new:
            admin.alter_group_offsets(args.group, new)
    rows = [("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")]
    rows += [(args.group, tp.topic, str(tp.partition), str(new[tp])) for tp in tps]
    print("\n".join(table(rows)), flush=True)
    new_group = g.state == "Dead"
    if not args.execute:
        also = (f"; consumer group '{args.group}' does not exist: --execute would create it with these offsets"
                if new_group else "")
        print(f"Dry run: nothing changed (add --execute to commit these offsets){also}.", file=sys.stderr)
    elif new_group:
        print(f"Consumer group '{args.group}' did not exist: it now has these committed offsets.", file=sys.stderr)
    return 0


def cmd_groups_delete(args: argparse.Namespace) -> int:
    from ..client.sync import Admin
    from ..errors import GroupIdNotFoundError

    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        try:
            admin.delete_group(args.group)
        except GroupIdNotFoundError:
            raise ClientError(unknown_group(args.group)) from None
    print(f"Deletion of requested consumer groups ('{args.group}') was successful.")
    return 0
