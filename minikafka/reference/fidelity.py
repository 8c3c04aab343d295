"""Differential scenarios: the same steps on Apache Kafka 3.9 and on minikafka, compared.

Each scenario runs its steps on both clusters with the same client (confluent-kafka's
AdminClient through each cluster's Kafka listener) and, after each step, compares the
ZooKeeper layouts (:mod:`.znodes`); then both answer the same refused admin requests
(:mod:`.refusals`), and go through the failover scenario (:mod:`.failover`: ISR shrink,
leader kill under a producer and a consumer, preferred election, controlled shutdown,
reassignment, an old controller's requests).  Last, the differential fuzzer (:mod:`.fuzz`)
runs its CI seeds on two fresh clusters; the page ends with its allow-list.  Every
difference must be explained in :data:`KNOWN` (a path pattern, the kind of difference and the reason),
:data:`KNOWN_REFUSALS` or :data:`KNOWN_FAILOVER`; the page docs/fidelity.md is generated
from what was observed::

    python -m minikafka.reference.fidelity            # start both clusters, print the page
    python -m minikafka.reference.fidelity --write    # ... and write docs/fidelity.md

tests/process/test_fidelity.py runs the same scenarios and fails when a difference is
unexplained or when docs/fidelity.md is not the page they produce.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..polling import poll
from . import failover, fuzz, fuzz_compare, fuzz_ops, refusals, znodes

PAGE = Path(__file__).resolve().parents[2] / "docs" / "fidelity.md"
TOPIC = "fidelity"


@dataclass(frozen=True)
class Side:
    """One cluster as the scenarios reach it."""

    name: str  # "Kafka" or "minikafka"
    zookeeper: str  # its ZooKeeper connect string
    bootstrap: str  # its Kafka listeners


@dataclass(frozen=True)
class Known:
    """An explained difference: znode paths matching ``pattern`` that differ by ``kind``."""

    pattern: str
    kind: str  # "only in Kafka", "only in minikafka" or "value"
    reason: str


KNOWN: tuple[Known, ...] = (
    Known(r"/brokers/ids/<id>", "value",
          "minikafka registers version 5 as Kafka does, adds its own fields (`storage`: memory or disk, and "
          "`log_since`), and lists its msgpack-over-HTTP listener beside the Kafka listener (`MINIKAFKA` in "
          "`endpoints` and in `listener_security_protocol_map`). Kafka's tools read the Kafka listener "
          "(`PLAINTEXT`) and ignore the rest."),
)


# refused admin requests (minikafka.reference.refusals) answered differently: case -> reason
KNOWN_REFUSALS: dict[str, str] = {}

# the failover scenario's rows (minikafka.reference.failover.rows) that differ: (what, step) -> reason.
# A tool's output (kafka-topics/kafka-consumer-groups --describe) is explained column by column, at
# every step: (what, column) -> reason, the columns as failover.differing_fields names them.
KNOWN_FAILOVER: dict[tuple[str, str], str] = {
}


def explain_failover(row: dict) -> str | None:
    """The reason a failover row differs, if it does and one is known (None when it does not differ)."""
    if row["kafka"] == row["ours"]:
        return None
    if isinstance(row["kafka"], list) and isinstance(row["ours"], list):
        reasons = [KNOWN_FAILOVER.get((row["what"], f)) for f in sorted(failover.differing_fields(row["kafka"],
                                                                                               row["ours"]))]
        return None if None in reasons else " ".join(dict.fromkeys(r for r in reasons if r))
    return KNOWN_FAILOVER.get((row["what"], row["step"])) or KNOWN_FAILOVER.get((row["what"], "*"))


def unexplained_failover(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["kafka"] != r["ours"] and explain_failover(r) is None]


def merge_tree_diffs(diffs: list[dict], more: list[dict]) -> list[dict]:
    """``diffs`` and the differences of ``more`` not already among them, each explained."""
    def key(d: dict) -> tuple:
        return (d["path"], d["kind"], json.dumps(d["kafka"], sort_keys=True), json.dumps(d["ours"], sort_keys=True))
    have = {key(d) for d in diffs}
    return diffs + [{**d, "known": explain(d)} for d in more if key(d) not in have]


def explain(diff: dict) -> Known | None:
    """The entry of :data:`KNOWN` that explains ``diff``, if any."""
    for k in KNOWN:
        if k.kind == diff["kind"] and re.fullmatch(k.pattern, diff["path"]):
            return k
    return None


# ----- the scenarios ----------------------------------------------------------------------------
def _admin(side: Side):  # noqa: ANN202 (confluent_kafka.admin.AdminClient)
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": side.bootstrap})


def _zk(side: Side):  # noqa: ANN202 (a started KazooClient)
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=side.zookeeper, timeout=10.0)
    zk.start(timeout=15)
    return zk


def _wait(what: str, side: Side, done: Callable[[], bool], timeout_s: float = 60) -> None:
    if not poll(done, timeout_s):
        raise TimeoutError(f"{side.name}: {what} within {timeout_s:.0f} s")


def _partition_states(zk, topic: str) -> list[dict]:  # noqa: ANN001
    base = f"/brokers/topics/{topic}/partitions"
    if not zk.exists(base):
        return []
    out = []
    for p in zk.get_children(base):
        got = zk.exists(f"{base}/{p}/state") and zk.get(f"{base}/{p}/state")
        if got:
            out.append(json.loads(got[0]))
    return out


def _full_isrs(zk) -> bool:  # noqa: ANN001
    """Every partition's ISR holds its whole assignment (a follower that has not fetched yet
    may leave it for a moment after a topic's creation, and come back)."""
    from kazoo.exceptions import NoNodeError

    try:
        for topic in zk.get_children("/brokers/topics"):
            data = zk.get(f"/brokers/topics/{topic}")[0]
            for p, replicas in (json.loads(data).get("partitions", {}) if data else {}).items():
                state = zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0]
                if len(json.loads(state).get("isr", [])) != len(replicas):
                    return False
    except NoNodeError:  # a topic being created or deleted
        return False
    return True


def _start_up(side: Side, zk) -> None:  # noqa: ANN001
    _wait("a controller", side, lambda: zk.exists("/controller") is not None)


def _create_topic(side: Side, zk) -> None:  # noqa: ANN001
    from confluent_kafka.admin import NewTopic
    admin = _admin(side)  # kept until the answer: the futures die with their client
    admin.create_topics([NewTopic(TOPIC, 3, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(60)
    _wait("3 partitions with a full ISR", side,
          lambda: len(states := _partition_states(zk, TOPIC)) == 3 and all(len(s["isr"]) == 3 for s in states))


def _change_config(side: Side, zk) -> None:  # noqa: ANN001
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    resource = ConfigResource("TOPIC", TOPIC, incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    admin = _admin(side)
    admin.incremental_alter_configs([resource])[resource].result(60)
    _wait("retention.ms in /config/topics", side,
          lambda: b"3600000" in (zk.get(f"/config/topics/{TOPIC}")[0] or b""))


def _delete_topic(side: Side, zk) -> None:  # noqa: ANN001
    admin = _admin(side)
    admin.delete_topics([TOPIC])[TOPIC].result(60)
    _wait("the topic's znodes gone", side, lambda: zk.exists(f"/brokers/topics/{TOPIC}") is None
          and not zk.get_children("/admin/delete_topics")
          and zk.exists(f"/config/topics/{TOPIC}") is None)


STEPS: tuple[tuple[str, Callable[[Side, Any], None]], ...] = (
    ("start-up", _start_up),
    (f"topic creation ({TOPIC}: 3 partitions, RF 3, min.insync.replicas=2)", _create_topic),
    ("config change (incremental: retention.ms)", _change_config),
    ("topic deletion", _delete_topic),
)


def run(kafka: Side, ours: Side) -> list[dict]:
    """Run every step on both clusters; each difference once, with the first step that
    showed it (``step``) and its explanation (``known``, or None)."""
    seen: dict[tuple, dict] = {}
    zks = {kafka.name: _zk(kafka), ours.name: _zk(ours)}
    try:
        for step, action in STEPS:
            for side in (kafka, ours):
                action(side, zks[side.name])
            time.sleep(0.5)  # notification znodes (/config/changes, /isr_change_notification) settle
            for diff in znodes.compare(*_settled_snapshots(kafka, ours, zks)):
                key = (diff["path"], diff["kind"], json.dumps(diff["kafka"], sort_keys=True),
                       json.dumps(diff["ours"], sort_keys=True))
                seen.setdefault(key, {**diff, "step": step, "known": explain(diff)})
    finally:
        for zk in zks.values():
            zk.stop()
            zk.close()
    return list(seen.values())


def _settled_snapshots(kafka: Side, ours: Side, zks: dict, attempts: int = 3) -> tuple[dict, dict]:
    """Both trees, taken while every partition of both has its full ISR: a busy machine can
    stall a follower long enough for its leader to shrink the ISR between the wait and the
    snapshot, and that moment is not what the step compares (it is taken again)."""
    for attempt in range(attempts):
        for side in (kafka, ours):
            _wait("every partition with its full ISR", side, lambda: _full_isrs(zks[side.name]))
        trees = znodes.snapshot(zks[kafka.name]), znodes.snapshot(zks[ours.name])
        if _full_isrs(zks[kafka.name]) and _full_isrs(zks[ours.name]):
            return trees
    return trees


def unexplained(diffs: list[dict]) -> list[dict]:
    return [d for d in diffs if d["known"] is None]


def compare_refusals(kafka: Side, ours: Side) -> list[dict]:
    """Every refused admin request asked of both: ``{"case", "kafka", "ours", "reason"}``;
    ``reason`` is None where the answers agree, or where they differ unexplained
    (:func:`unexplained_refusals`)."""
    k, o = refusals.run(kafka.bootstrap), refusals.run(ours.bootstrap)
    return [{"case": name, "kafka": k[name], "ours": o[name], "reason": KNOWN_REFUSALS.get(name)} for name in k]


def unexplained_refusals(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["kafka"] != r["ours"] and r["reason"] is None]


# ----- the page ---------------------------------------------------------------------------------
def _cell(value: Any) -> str:
    text = "(none)" if value is None else json.dumps(value, sort_keys=True)
    return "`" + text.replace("|", "\\|") + "`"


def _output(value: Any) -> str:
    """A normalized tool output in one table cell: its lines, each a `code` span."""
    if not isinstance(value, list):
        return _cell(value)
    return "<br>".join(_cell(line if isinstance(line, str) else
                             " ".join(f"{k}={v}" for k, v in line.items())) for line in value) or "(empty)"


def render(diffs: list[dict], kafka_version: str, refused: list[dict], failed_over: list[dict]) -> str:
    """docs/fidelity.md from the observed differences, the refused requests' answers and
    the failover scenario's rows."""
    lines = (_introduction(kafka_version) + _layout_section(diffs) + _refusals_section(refused)
             + _failover_section(failed_over))
    return "\n".join(lines) + "\n\n" + fuzz.render_section()


def _introduction(kafka_version: str) -> list[str]:
    return [
        "# Fidelity: where minikafka differs from Apache Kafka",
        "",
        "<!-- Generated by `python -m minikafka.reference.fidelity --write` from a run against Apache Kafka "
        f"{kafka_version}; tests/process/test_fidelity.py fails when this page is stale. -->",
        "",
        f"minikafka is compared with Apache Kafka {kafka_version} in ZooKeeper mode, run on the same machine "
        "(`minikafka reference up`, see [performance.md](performance.md) and the README). The same steps run "
        "on both clusters, through the same client (confluent-kafka's AdminClient on each cluster's Kafka "
        "listener), and after each step the two ZooKeeper trees are compared: every path and its JSON, with "
        "ids, timestamps, ports, epochs and broker ids masked (list lengths are kept).",
        "",
        "Steps: " + "; ".join(step for step, _ in STEPS) + "; then the failover scenario (below): "
        + "; ".join(f"{step} ({failover.STEP_TEXT[step]})" for step, _ in failover.STEPS) + ".",
        "",
        "Every difference found is listed here with its reason. A difference without a reason fails the test;",
        "fixing one removes it from this page.",
    ]


def _layout_section(diffs: list[dict]) -> list[str]:
    """The differences of the ZooKeeper trees, one row each."""
    lines = [
        "",
        "## ZooKeeper layout",
        "",
        "| znode | difference | first seen after | Kafka | minikafka | why |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for d in sorted(diffs, key=lambda d: (d["path"], d["kind"])):
        reason = d["known"].reason if d["known"] else "**unexplained**"
        lines.append(f"| `{d['path']}` | {d['kind']} | {d['step'].split(' (')[0]} | {_cell(d['kafka'])} | "
                     f"{_cell(d['ours'])} | {reason} |")
    if not diffs:
        lines.append("| (none) | | | | | |")
    return lines


def _refusals_section(refused: list[dict]) -> list[str]:
    """The refused admin requests' answers on both clusters."""
    same = sum(r["kafka"] == r["ours"] for r in refused)
    lines = [
        "",
        "## Refused admin requests",
        "",
        "The same mistakes asked of both clusters through confluent-kafka's AdminClient "
        "(`minikafka/reference/refusals.py`), in this order, after the steps above; the error name each answered "
        f"(`NONE`: accepted). {same} of {len(refused)} answers are the same.",
        "",
        "| request | Kafka | minikafka | why they differ |",
        "| --- | --- | --- | --- |",
    ]
    for r in refused:
        why = "" if r["kafka"] == r["ours"] else (r["reason"] or "**unexplained**")
        lines.append(f"| {r['case']} | `{r['kafka']}` | `{r['ours']}` | {why} |")
    return lines


def _failover_section(failed_over: list[dict]) -> list[str]:
    """The failover scenario's rows on both clusters."""
    same = sum(r["kafka"] == r["ours"] for r in failed_over)
    lines = [
        "",
        "## Failovers",
        "",
        f"`minikafka/reference/failover.py` takes a topic `{failover.TOPIC}` (1 partition, RF 3, "
        "min.insync.replicas=2) through the failover steps above on both clusters, run with "
        + " and ".join(f"{k}={v}" for k, v in failover.BROKER_CONFIGS.items())
        + " (a paused follower leaves the ISR long before its ZooKeeper session expires). Brokers are named by "
        "role: the topic is "
        "created with the assignment A,B,C where C is the controller and A, B the two other brokers in id order, "
        "so the controller is never the broker paused, killed or stopped. Each step is observed in the state it "
        "reaches (the follower still paused, the leader still down): the partition's state znode (leader, ISR, "
        "leader epoch relative to the topic's creation), the assignment, the brokers in /brokers/ids, the whole "
        "ZooKeeper tree (its differences are in the first table; there every partition's ISR and epochs are "
        "masked, as they depend on where replicas landed), and Kafka's own `kafka-topics --describe` and "
        "`kafka-consumer-groups --describe` (Kafka's 3.9 tools jar, on both clusters; topic ids, member ids, "
        "hosts and client ids masked). While follower B is paused one record is written (acks=1), so that the "
        "leader's log end moves past B's; a second topic, `failover-idle` (the same assignment; both topics get "
        "one record with acks=all at creation), shows what happens to the ISR of a partition nothing is written to. "
        "During the leader kill an idempotent producer (acks=all, confluent-kafka) "
        f"sends {failover.RECORDS} records, {failover.BEFORE_KILL} of them before the kill, and a consumer group "
        f"(`{failover.GROUP}`) reads them; compared are the classes of what they saw, not timings. Last, one "
        "broker of each cluster gets LeaderAndIsr, UpdateMetadata and StopReplica from the controller epoch "
        "before the current one (`minikafka/reference/controller_epoch.py`: Kafka's binary protocol, version 0, "
        "on Kafka's inter-broker listener; msgpack with the cluster credential on minikafka's). "
        f"{same} of {len(failed_over)} rows are the same.",
        "",
        "| step | compared | Kafka | minikafka | why they differ |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in failed_over:
        same_row = r["kafka"] == r["ours"]
        why = "" if same_row else (explain_failover(r) or "**unexplained**")
        ours = "same" if same_row and isinstance(r["ours"], list) else _output(r["ours"])
        lines.append(f"| {r['step']} | {r['what']} | {_output(r['kafka'])} | {ours} | {why} |")
    return lines


# ----- the command ------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run the differential scenarios against Apache Kafka 3.9 and "
                                             "minikafka, and print (or --write) docs/fidelity.md.")
    ap.add_argument("--write", action="store_true", help=f"write {PAGE}")
    args = ap.parse_args(argv)
    from ..cluster import free_ports, launcher
    from . import cluster as reference

    with tempfile.TemporaryDirectory(prefix="minikafka-fidelity-") as tmp:
        lag = failover.BROKER_CONFIGS
        ref = reference.up(Path(tmp) / "kafka", configs=lag, progress=lambda m: print(f"Kafka: {m}", file=sys.stderr))
        try:
            zk_port = free_ports.free_port()
            base = free_ports.free_port_block(3, avoid=(zk_port,))
            kbase = free_ports.free_port_block(3, avoid=(zk_port, base, base + 1, base + 2))
            ours = launcher.up(Path(tmp) / "minikafka", zookeeper_port=zk_port, base_port=base, kafka_base_port=kbase,
                               broker_configs=lag)
            try:
                kafka_side = Side("Kafka", ref.zookeeper_connect, ref.bootstrap)
                ours_side = Side("minikafka", ours.zookeeper.connect,
                                 ",".join(f"127.0.0.1:{b.kafka_port}" for b in ours.brokers.values()))
                diffs = run(kafka_side, ours_side)
                refused = compare_refusals(kafka_side, ours_side)
                kafka_run, ours_run = failover.observe(str(Path(tmp) / "kafka"), str(Path(tmp) / "minikafka"))
                diffs = merge_tree_diffs(diffs, failover.tree_diffs(kafka_run, ours_run))
                failed_over = failover.rows(kafka_run, ours_run)
            finally:
                launcher.down(Path(tmp) / "minikafka")
        finally:
            reference.down(Path(tmp) / "kafka")
        page = render(diffs, ref.version, refused, failed_over)
        fuzzed = _fuzz(Path(tmp) / "fuzz")
    if args.write:
        PAGE.write_text(page)
    else:
        sys.stdout.write(page)
    missing = unexplained(diffs)
    for d in missing:
        print(f"unexplained: {d['kind']} {d['path']}", file=sys.stderr)
    odd = unexplained_refusals(refused)
    for r in odd:
        print(f"unexplained: {r['case']}: Kafka {r['kafka']}, minikafka {r['ours']}", file=sys.stderr)
    moved = unexplained_failover(failed_over)
    for r in moved:
        print(f"unexplained: {r['step']}: {r['what']}: Kafka {r['kafka']}, minikafka {r['ours']}", file=sys.stderr)
    for r in fuzzed:
        for d in r.unexplained:
            print(f"unexplained: fuzz seed {r.seed}: {fuzz_compare.describe(d)}", file=sys.stderr)
    return 1 if missing or odd or moved or any(r.unexplained for r in fuzzed) else 0


def _fuzz(folder: Path) -> list:
    """The fuzzer's CI seeds on two fresh clusters (after the scripted steps' clusters are down):
    the page lists its allow-list, and an unexplained difference fails the command."""
    with fuzz.clusters(folder, progress=lambda m: print(f"fuzz: {m}", file=sys.stderr)) as (kafka, ours):
        fuzzer = fuzz.Fuzzer(kafka, ours)
        return [fuzzer.check(seed, fuzz_ops.generate(seed, fuzz.CI_OPS), shrink=False) for seed in fuzz.CI_SEEDS]


if __name__ == "__main__":
    sys.exit(main())
