"""The differential fuzzer's fault steps: one broker, picked by its role, crashed, stopped or
paused, and the cluster's reaction, as one step of a sequence.

A fault step (``{"op": "fault", "signal": "KILL", "role": "leader", "topic": "t0",
"partition": 0}``, see :mod:`.fuzz_ops`) runs the same way on both clusters, and is atomic
from the sequence's point of view, so that the operations after it meet a settled cluster
on both:

1. every partition of the sequence's topics settles (a leader, its full ISR, the high
   watermark at the log end);
2. the role is resolved to a broker id on this cluster: the partition's ``leader``, its
   first ``follower`` in replica order, the ``controller`` (/controller), the
   ``group_coordinator`` or ``txn_coordinator`` (FindCoordinator of the group or
   transactional id);
3. that broker gets the signal: KILL (SIGKILL), TERM (SIGTERM: a controlled shutdown;
   waited for until the process has exited) or STOP (SIGSTOP);
4. the step waits for what Kafka's controller does about a broker that is gone: its
   registration (/brokers/ids/ID) vanishes (at once after TERM, after
   zookeeper.session.timeout.ms otherwise), a live controller other than it exists, and
   every partition it was a replica of has another leader and an ISR without it, or no
   leader and it as the ISR's last member;
5. the broker comes back (KILL, TERM: started again with its data; STOP: SIGCONT, it finds
   its ZooKeeper session expired and registers again), and the step waits until the
   cluster has settled again: the three brokers registered, every partition of the
   sequence's topics and of the internal topics with a leader and its full ISR, the
   coordinators of the sequence's groups and transactional ids found.

The answer holds what both clusters should agree on, with broker ids and timings left out
(which broker holds which replica differs between the two: Kafka places replicas from a
random broker on): the role and signal; for a partition's leader or follower the
partition's outcome (another leader or offline, out of the ISR, its leader epoch's change
at the fault and once settled); for the controller whether another broker took over; for
a coordinator whether another broker coordinates meanwhile; and checks over every
partition of the sequence's topics: every partition it led has another leader (or is
offline as it was the last ISR member), it left every ISR, each partition's leader epoch
stepped as Kafka's controller steps it (see :func:`expected_epoch_step`), on its return
only offline partitions were elected again, no acknowledged record was lost (each high
watermark at least what it was), and the cluster settled.

Whether the broker was the controller too is left out of the answer: it depends on which
broker won the controller election, so it may hold on one cluster only.  Where it was,
a partition it led steps its leader epoch by 2 rather than 1 (a new controller's
takeover); the partition's reported epoch changes leave that takeover step out, and the
check over every partition expects it.
"""
from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any

from ..errors import ClientError

if TYPE_CHECKING:  # pragma: no cover
    from .fuzz_run import Runner, Side

GONE_S = 40.0  # at most this long for a signalled broker's registration to vanish (session timeout 6 s)
REACT_S = 30.0  # ... for the controller to move leaderships and shrink the ISRs after that
CHECKPOINT_S = 2.0  # before the signal: two of the fuzz's log start checkpoint intervals (1 s on both clusters)
BACK_S = 120.0  # ... for the broker to be back and the cluster settled (a JVM's start on a busy machine)
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")


class Processes:
    """One cluster's broker processes, by broker id: the `minikafka cluster` launcher's or the
    `minikafka reference` cluster's records in the side's folder (pids only, never names)."""

    def __init__(self, side: "Side") -> None:
        if not side.dir:
            raise ClientError(f"{side.name}: the fuzzer has no folder of this cluster, so cannot signal its brokers")
        self.kafka = side.name == "Kafka"
        self.dir = side.dir

    def signal(self, broker_id: int, name: str) -> None:
        """KILL and TERM return once the process is gone (TERM: its controlled shutdown done)."""
        from ..cluster import launcher
        from . import cluster as reference

        if self.kafka:
            reference.signal_broker(self.dir, broker_id, name)
        elif name == "TERM":
            launcher.stop(self.dir, broker_id, grace_s=reference.BROKER_STOP_GRACE_S)
        elif name == "CONT":
            launcher.resume(self.dir, broker_id)
        else:
            launcher.kill(self.dir, broker_id, name)

    def state(self, broker_id: int) -> str:
        """``running``, ``stopped`` (paused) or ``dead``."""
        from ..cluster import launcher
        from ..cluster import state as cluster_state
        from . import cluster as reference

        if self.kafka:
            return reference.proc_state(reference.ReferenceState.load(self.dir).brokers[broker_id].pid, self.dir)
        return launcher.proc_state(cluster_state.load(self.dir).broker(broker_id).pid, launcher.folder_markers(self.dir))

    def start(self, broker_id: int) -> None:
        """Start a broker that exited again, with its data (returns once it is spawned)."""
        from ..cluster import launcher
        from . import cluster as reference

        if self.kafka:
            reference.start(self.dir, broker_id)
        else:
            launcher.start(self.dir, broker_id, wait=False)

    def ids(self) -> list[int]:
        from ..cluster import state as cluster_state
        from . import cluster as reference

        if self.kafka:
            return sorted(reference.ReferenceState.load(self.dir).brokers)
        return sorted(cluster_state.load(self.dir).brokers)

    def heal(self) -> list[int]:
        """Resume a paused broker and start one that is not running (left so by a sequence
        that failed half-way through a fault step); the ids it brought back."""
        back = []
        for b in self.ids():
            state = self.state(b)
            if state == "stopped":
                self.signal(b, "CONT")
                back.append(b)
            elif state == "dead":
                self.start(b)
                back.append(b)
        return back


# ----- reading the cluster from ZooKeeper ---------------------------------------------------
def partition_states(runner: "Runner", topics: list[str]) -> dict[tuple[str, int], dict]:
    """``(topic, partition) -> {"leader", "epoch", "isr", "replicas"}`` of ``topics`` as the
    controller last wrote them to ZooKeeper (topics or partitions not there are left out)."""
    out: dict[tuple[str, int], dict] = {}
    zk = runner.zk
    for topic in topics:
        try:
            assignment = json.loads(zk.get(f"/brokers/topics/{topic}")[0] or b"{}").get("partitions", {})
        except Exception:  # noqa: BLE001 (NoNodeError: deleted meanwhile)
            continue
        for p, replicas in assignment.items():
            try:
                state = json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])
            except Exception:  # noqa: BLE001
                continue
            out[(topic, int(p))] = {"leader": state["leader"], "epoch": state["leader_epoch"],
                                    "isr": list(state["isr"]), "replicas": list(replicas)}
    return out


def _controller(runner: "Runner") -> int | None:
    try:
        return int(json.loads(runner.zk.get("/controller")[0])["brokerid"])
    except Exception:  # noqa: BLE001 (none elected)
        return None


def _registered(runner: "Runner") -> set[int]:
    try:
        return {int(b) for b in runner.zk.get_children("/brokers/ids")}
    except Exception:  # noqa: BLE001
        return set()


def _find_coordinator(runner: "Runner", key: str, key_type: int) -> dict | None:
    """FindCoordinator's answer for ``key`` (0: a group, 1: a transactional id) when it
    names a coordinator, else None."""
    got = runner.wire.find_coordinator(key, key_type)
    return got if got is not None and got["error_code"] == 0 else None


def _coordinator(runner: "Runner", key: str, key_type: int) -> int | None:
    """The broker id FindCoordinator names for ``key``, or None."""
    got = _find_coordinator(runner, key, key_type)
    return None if got is None else got["node_id"]


def _coordinator_ready(runner: "Runner", key: str, key_type: int) -> bool:
    """The coordinator is found, and for a group it has loaded it (DescribeGroups answers NONE:
    not NOT_COORDINATOR nor COORDINATOR_LOAD_IN_PROGRESS, which librdkafka's AdminClient
    does not survive in ListConsumerGroupOffsets)."""
    from ..protocol.kafka import apis

    got = _find_coordinator(runner, key, key_type)
    if got is None:
        return False
    if key_type == 1:
        return True
    try:
        described = runner.wire.ask((got["host"], got["port"]), apis.DESCRIBE_GROUPS, 0, {"groups": [key]})
    except OSError:
        return False
    return all(g["error_code"] == 0 for g in described["groups"])


def _sequence_topics(runner: "Runner") -> list[str]:
    """The sequence's topics that exist now (its prefix's)."""
    try:
        return sorted(t for t in runner.zk.get_children("/brokers/topics") if t.startswith(runner.prefix))
    except Exception:  # noqa: BLE001
        return []


def _internal_topics(runner: "Runner") -> list[str]:
    return [t for t in INTERNAL_TOPICS if runner.zk.exists(f"/brokers/topics/{t}")]


# ----- the step -------------------------------------------------------------------------------
def _resolve(runner: "Runner", op: dict, states: dict[tuple[str, int], dict]) -> tuple[int | None, str]:
    """The broker id the role names on this cluster, or None and why not."""
    role = op["role"]
    if role in ("leader", "follower"):
        st = states.get((runner.name(op["topic"]), op["partition"]))
        if st is None:
            return None, "UNKNOWN_TOPIC_OR_PARTITION"
        if st["leader"] < 0:
            return None, "LEADER_NOT_AVAILABLE"
        if role == "leader":
            return st["leader"], "NONE"
        followers = [r for r in st["replicas"] if r != st["leader"]]
        return (followers[0], "NONE") if followers else (None, "no follower")
    if role == "controller":
        found = _controller(runner)
        return found, "NONE" if found is not None else "no controller"
    key, key_type = _coordinator_key(runner, op)
    seen: dict[str, int | None] = {"id": None}  # the internal topic may be created by this very request: retried

    def known() -> bool:
        seen["id"] = _coordinator(runner, key, key_type)
        return seen["id"] is not None
    runner._wait(known)
    return (seen["id"], "NONE") if seen["id"] is not None else (None, "COORDINATOR_NOT_AVAILABLE")


def _coordinator_key(runner: "Runner", op: dict) -> tuple[str, int]:
    """The FindCoordinator key and key type of a coordinator role."""
    return (runner.name(op["group"]), 0) if op["role"] == "group_coordinator" else (runner.name(op["txn"]), 1)


def _reacted(before: dict, now: dict, victim: int) -> bool:
    """Every partition the victim was a replica of has moved on without it: another leader
    and an ISR without it, or no leader with it as the ISR's last member."""
    for tp, st in before.items():
        if victim not in st["replicas"] or tp not in now:
            continue
        cur = now[tp]
        if cur["leader"] == victim:
            return False
        if cur["leader"] < 0:  # leaderless: only as the ISR's last member (else an election is on its way)
            if cur["isr"] != [victim]:
                return False
        elif victim in cur["isr"]:
            return False
    return True


def unsettled(runner: "Runner", brokers: list[int], topics: list[str], keys: list[tuple[str, int]]) -> str | None:
    """What keeps the cluster from having settled, or None: every broker registered, every
    partition of ``topics`` with a leader and its full ISR (in ZooKeeper and in every broker's
    Metadata), the coordinators of ``keys`` found (and a group's loaded)."""
    missing = set(brokers) - _registered(runner)
    if missing:
        return f"brokers {sorted(missing)} not registered"
    if _controller(runner) is None:
        return "no controller"
    for (topic, p), st in sorted(partition_states(runner, topics).items()):
        if st["leader"] < 0 or sorted(st["isr"]) != sorted(st["replicas"]):
            return f"{topic}-{p}: leader {st['leader']} ISR {st['isr']} in ZooKeeper"
    for t in topics:
        if not runner._ready(t):
            return f"{t}: a broker's Metadata has no leader or not the full ISR"
    for key, key_type in keys:
        if not _coordinator_ready(runner, key, key_type):
            return f"the coordinator of {'group' if key_type == 0 else 'transactional id'} {key} not ready"
    return None


def _settled(runner: "Runner", brokers: list[int], topics: list[str], keys: list[tuple[str, int]]) -> bool:
    return unsettled(runner, brokers, topics, keys) is None


def _keys(runner: "Runner", op: dict) -> list[tuple[str, int]]:
    """The coordinators to find once settled: the groups and transactional ids the runner has used."""
    keys = [(runner.name(g), 0) for g in sorted(runner.used_groups)] + \
        [(runner.name(x), 1) for x in sorted(runner.used_txns)]
    if op.get("group"):
        keys.append((runner.name(op["group"]), 0))
    if op.get("txn"):
        keys.append((runner.name(op["txn"]), 1))
    return sorted(set(keys))


def _high_watermarks(runner: "Runner", tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    out = {}
    for topic, p in tps:
        try:
            got = runner.wire.list_offset(topic, p, -1)
        except OSError:
            continue
        if got["error"] == "NONE":
            out[(topic, p)] = got["offset"]
    return out


def takeover_step(before: dict, during: dict, victim: int, was_controller: bool, signal: str) -> int:
    """1 where a new controller took over from the signalled broker and elected a new leader
    for a partition that broker led, else 0.  Kafka's controller, starting up, first moves
    the replicas of unregistered brokers offline (out of the ISRs, the partitions they led
    left without a leader: leader epoch + 1) and only then elects (+ 1 again); a running
    controller elects first, and the dead leader is then no longer in the ISR (+ 1 in all).
    After SIGTERM the controlled shutdown moved the leaderships before the broker left."""
    return int(was_controller and signal != "TERM" and before["leader"] == victim and during["leader"] >= 0)


def expected_epoch_step(before: dict, during: dict, victim: int, was_controller: bool, signal: str) -> int:
    """How much a partition's leader epoch steps while the signalled broker is gone: 0 where
    it was not in the ISR, else 1 for the one change that takes it out (an election, or an
    ISR shrink, by the controller), plus the takeover step (:func:`takeover_step`)."""
    if victim not in before["isr"]:
        return 0
    return 1 + takeover_step(before, during, victim, was_controller, signal)


def _moved(st: dict, victim: int) -> str:
    return "offline" if st["leader"] < 0 else "same leader" if st["leader"] == victim else "another leader"


def fault(runner: "Runner", op: dict) -> dict[str, Any]:
    """Run one fault step on the runner's cluster; its answer (see the module's docstring)."""
    procs = Processes(runner.side)
    procs.heal()
    signal, role = op["signal"], op["role"]
    answer: dict[str, Any] = {"role": role, "signal": signal}
    topics = _sequence_topics(runner)
    for topic in topics:
        runner.settle(topic)
    before = partition_states(runner, topics)
    victim, why = _resolve(runner, op, before)
    if victim is None:
        return {**answer, "victim": why}
    answer["victim"] = "NONE"
    brokers = procs.ids()
    keys = _keys(runner, op)
    acked = _high_watermarks(runner, sorted(before))
    controller = _controller(runner)
    was_controller = controller == victim
    # a log start moved by the sequence is in each broker's log-start-offset-checkpoint by now on
    # both clusters, so a killed broker comes back with it on both (see FUZZ_CONFIGS)
    time.sleep(CHECKPOINT_S)
    procs.signal(victim, signal)
    try:
        during = _while_gone(runner, op, answer, victim, controller, topics, before)
    finally:
        if signal == "STOP":
            procs.signal(victim, "CONT")
        else:
            if procs.state(victim) != "dead":  # TERM: the controlled shutdown outlasted its grace
                procs.signal(victim, "KILL")
            procs.start(victim)
    settled = runner._wait(lambda: _settled(runner, brokers, topics + _internal_topics(runner), keys), BACK_S)
    runner.fresh_admin()  # no coordinator or leader remembered from before the step
    after = partition_states(runner, topics)
    answer["settled"] = settled
    if not settled:  # why, for whoever reads the run's log (not compared)
        why_not = unsettled(runner, brokers, topics + _internal_topics(runner), keys)
        print(f"{runner.side.name}: not settled {BACK_S:.0f} s after a fault step: {why_not}", file=sys.stderr)
    if role in ("leader", "follower"):
        tp = (runner.name(op["topic"]), op["partition"])
        b, d, a = before[tp], during.get(tp), after.get(tp)
        extra = 0 if d is None else takeover_step(b, d, victim, was_controller, signal)
        answer["partition"] = None if d is None or a is None else {
            "at_fault": _moved(d, victim), "in_isr_at_fault": victim in d["isr"],
            "epoch_at_fault": d["epoch"] - b["epoch"] - extra, "epoch_settled": a["epoch"] - b["epoch"] - extra}
    answer["checks"] = _fault_checks(before, during, after, victim, was_controller, signal, acked,
                                     _high_watermarks(runner, sorted(acked)))
    return answer


def _while_gone(runner: "Runner", op: dict, answer: dict[str, Any], victim: int, controller: int | None,
                topics: list[str], before: dict) -> dict:
    """While the signalled broker is gone: wait until its registration is gone and the
    controller reacted, note in ``answer`` whether the registration went and who is the
    controller or coordinator now; the partitions' states then."""
    role = op["role"]
    gone = runner._wait(lambda: victim not in _registered(runner), GONE_S)
    internal = _internal_topics(runner)
    internal_before = partition_states(runner, internal)
    runner._wait(lambda: _controller(runner) not in (None, victim) and
                 _reacted(before, partition_states(runner, topics), victim) and
                 _reacted(internal_before, partition_states(runner, internal), victim), REACT_S)
    during = partition_states(runner, topics)
    answer["registration_gone"] = gone
    if role == "controller":
        now = _controller(runner)
        answer["controller"] = "none" if now is None else "another broker" if now != controller else "same broker"
    if role.endswith("coordinator"):  # every broker's metadata may take a moment to say so
        runner._wait(lambda: _coordinator(runner, *_coordinator_key(runner, op)) not in (None, victim), REACT_S)
        now_c = _coordinator(runner, *_coordinator_key(runner, op))
        answer["coordinator"] = "none" if now_c is None else "another broker" if now_c != victim else "same broker"
    return during


def _fault_checks(before: dict, during: dict, after: dict, victim: int, was_controller: bool, signal: str,
                 acked: dict[tuple[str, int], int], high_watermarks: dict[tuple[str, int], int]) -> dict[str, bool]:
    """What a fault step must have done to the partitions' states ``before`` it, ``during``
    it and ``after`` the broker came back, as Kafka does; ``acked`` and ``high_watermarks``
    are the high watermarks before the step and now."""
    led = [tp for tp, st in before.items() if st["leader"] == victim and tp in during]
    held = [tp for tp, st in before.items() if victim in st["replicas"] and tp in during]
    return {
        # every partition it led: another leader, or none where it was the ISR's last member
        "leaders_moved": all(during[tp]["leader"] != victim and (during[tp]["leader"] >= 0) == (len(before[tp]["isr"]) > 1)
                             for tp in led),
        # it left every ISR (but the last member's place, kept by a leaderless partition)
        "left_isrs": all(victim not in during[tp]["isr"] or during[tp]["isr"] == [victim] for tp in held),
        # each partition it was a replica of: the leader epoch stepped as Kafka's controller steps it
        "epoch_steps": all(during[tp]["epoch"] - before[tp]["epoch"] ==
                           expected_epoch_step(before[tp], during[tp], victim, was_controller, signal) for tp in held),
        # on its return: a new leader epoch only where the partition was offline (then + 1)
        "return_elections": all(after[tp]["epoch"] - during[tp]["epoch"] == (1 if during[tp]["leader"] < 0 else 0)
                                for tp in held if tp in after),
        # no acknowledged record lost: every high watermark at least what it was before
        "acked_kept": all(hw >= acked[tp] for tp, hw in high_watermarks.items()),
        "untouched_partitions_kept": all(after[tp]["epoch"] == st["epoch"] for tp, st in before.items()
                                         if victim not in st["replicas"] and tp in after),
    }
