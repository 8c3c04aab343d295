"""Named replication scenarios on live processes: ``minikafka scenario --live NAME``.

Each scenario starts its own small cluster (ZooKeeper and 3 or 4 brokers on free
ports, disk storage, in a temporary folder; every broker in a cgroup of its own),
drives its faults with link cuts (:mod:`minikafka.chaos.links`), process kills and
controller-made leader changes, and checks one invariant, printing after every step
what the brokers themselves report (``replica_state``: role, LEO, HW, leader epoch,
epoch cache) and what each replica's segment files hold.  The broker setting
``replication.truncation`` (``leader_epoch`` or ``high_watermark``) selects the
follower truncation rule.

* ``kip101-loss``: KIP-101's first scenario.  A follower holds an acknowledged record
  but not yet the high watermark that covers it (the leader's answer carrying it is
  held back by a cut); it becomes follower at a new leader epoch (and truncates to
  its HW under ``high_watermark``) while its fetches cannot reach the leader; then
  the leader dies and the follower is elected.
* ``kip279-flipflop``: leadership flips between two brokers three times while their
  fetchers are cut off from each other, each leader writing at its own epoch.
* ``kip320-zombie``: a follower keeps fetching at its old leader epoch while the
  controller's LeaderAndIsr requests to it are lost; meanwhile leadership moves away
  and back, and the leader's log changes under it.  Under ``leader_epoch`` its fetches
  carry that epoch and the leader refuses them (FENCED_LEADER_EPOCH); under
  ``high_watermark`` they carry none (a broker from before KIP-320), the leader serves
  them and the zombie appends the leader's records after a tail the leader does not have.

The verdict is observed, never assumed: records acknowledged with acks=all must be in
the final log at their offsets, replicas must hold the same records up to the HW
(``replica_state`` checksums and the segment files), and, for the zombie, its segment
files must not hold the leader's records after a tail of its own, and under
``leader_epoch`` the leader's refusals must show in its ``minikafka_fenced_fetches_total``.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable

from ..cluster import launcher
from ..cluster.state import load
from ..errors import CorruptMessageError
from ..metric_names import FENCED_FETCHES
from ..protocol.records.batch import iter_records, validate_batch
from .checker import compare_replicas, read_final_log
from .cluster import FAST_SETTINGS, ZkReader, post, start_cluster
from .links import ClusterLinks, Cut, Links, check_available

TRUNCATIONS = ("leader_epoch", "high_watermark")
TOPIC = "live"
FENCED = FENCED_FETCHES.name  # a follower's fetches the leader refused (KIP-320)

# Scenario broker settings (on top of FAST_SETTINGS):
# * followers that cannot fetch stay in the ISR for the whole scenario (a leader
#   removes a follower only after replica.lag.time.max.ms);
# * a follower fetch with nothing new waits at the leader for up to 2.5 s, so the
#   answer that would carry a new HW leaves the leader that long after the ack;
# * broker-to-broker and controller requests time out after 4 s, so that a request
#   caught in a cut is retried soon after the heal;
# * no automatic preferred-leader elections: the scenario moves leadership itself.
LIVE_SETTINGS = {
    "replica.lag.time.max.ms": "120000",
    "replica.fetch.wait.max.ms": "2500",
    "request.timeout.ms": "4000",
    "auto.leader.rebalance.enable": "false",
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
}


class ScenarioError(Exception):
    """The scenario could not be carried out (a step timed out, a precondition was not
    reached); the message says which."""


@dataclass
class LiveResult:
    """What a live scenario printed and found."""

    name: str
    truncation: str
    lines: list[str] = field(default_factory=list)
    verdict: str = ""
    anomaly: bool = False
    completed: bool = False
    elapsed_s: float = 0.0
    dir: str = ""
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """The invariant held (and the scenario ran to the end)."""
        return self.completed and not self.anomaly


def read_segments(data_dir: str, topic: str, partition: int) -> dict[int, tuple[str, int]]:
    """A replica's log as its segment files hold it: offset -> (value, leader epoch).
    Read-only; stops at the first batch that is not complete yet."""
    d = os.path.join(data_dir, f"{topic}-{partition}")
    out: dict[int, tuple[str, int]] = {}
    try:
        names = sorted(n for n in os.listdir(d) if n.endswith(".log"))
    except OSError:
        return out
    for name in names:
        try:
            with open(os.path.join(d, name), "rb") as f:
                buf = f.read()
        except OSError:
            continue
        pos = 0
        while pos < len(buf):
            try:
                h = validate_batch(buf, pos)
            except (CorruptMessageError, ValueError, IndexError):
                break
            raw = bytes(buf[pos:pos + h.size])
            for r in iter_records(raw, validate=False):
                out[r.offset] = (r.value.decode(errors="replace") if r.value is not None else "", h.leader_epoch)
            pos += h.size
    return out


class LiveCluster:
    """A scenario's own cluster (context manager): started in a temporary folder with every
    broker in a cgroup of its own, stopped and removed (with every rule and cgroup) on exit."""

    def __init__(self, truncation: str, brokers: int, say: Callable[[str], None], keep: bool = False) -> None:
        self.truncation = truncation
        self.n = brokers
        self.say = say
        self.keep = keep
        self.tmp = ""
        self.dir = ""
        self.links: Links | None = None
        self.zk: ZkReader | None = None
        self.net: ClusterLinks | None = None
        self.brokers: dict[int, tuple[str, int]] = {}
        self.bootstrap = ""
        self.acked: list[tuple[int, str]] = []  # (offset, value) acknowledged with acks=all
        self.written: list[tuple[int, str]] = []  # (offset, value) acknowledged with acks=1
        self.failed = False
        self.avoid: set[int] = set()  # brokers clients should not ask (a zombie's metadata is stale)
        self.facts: dict[str, Any] = {}

    # -- lifecycle ------------------------------------------------------------------------
    def __enter__(self) -> "LiveCluster":
        self.tmp = tempfile.mkdtemp(prefix="minikafka-live-")
        self.dir = os.path.join(self.tmp, "cluster")
        try:
            self.links = Links().open()
            configs = {**FAST_SETTINGS, **LIVE_SETTINGS, "replication.truncation": self.truncation}
            t = time.monotonic()
            start_cluster(self.dir, "disk", configs, brokers=self.n, wrap=ClusterLinks.wrap_for(self.links))
            state = load(self.dir)
            self.net = ClusterLinks(self.links, state)
            self.brokers = {b: (s.host, s.port) for b, s in state.brokers.items()}
            self.bootstrap = ",".join(f"{h}:{p}" for h, p in self.brokers.values())
            self.zk = ZkReader(state.zookeeper.connect)
            self.say(f"- started ZooKeeper and {self.n} brokers in {self.dir} ({time.monotonic() - t:.1f}s), "
                     f"each broker in cgroup {self.links.group}/broker-N; replication.truncation={self.truncation}")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.failed = True
        if self.zk is not None:
            self.zk.close()
            self.zk = None
        try:
            if self.dir and os.path.exists(os.path.join(self.dir, "cluster.json")):
                launcher.down(self.dir)
        finally:
            if self.links is not None:
                self.links.close()
                self.links = None
            if self.tmp and not self.keep and not self.failed:
                shutil.rmtree(self.tmp, ignore_errors=True)

    # -- waiting and reading ------------------------------------------------------------------
    def wait(self, cond: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.1) -> Any:
        """Poll ``cond`` until it returns something true (returned) or raise ScenarioError."""
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while True:
            try:
                got = cond()
                if got:
                    return got
            except Exception as exc:  # a broker not answering yet
                last = exc
            if time.monotonic() >= deadline:
                raise ScenarioError(f"timed out after {timeout_s:g}s waiting for {what}"
                                    + (f" (last error: {last})" if last else ""))
            time.sleep(interval_s)

    def settle(self, cond: Callable[[], Any], timeout_s: float) -> Any:
        """Like :meth:`wait`, but returns None when ``cond`` does not come true in time (the
        trace then shows the state as it is)."""
        try:
            return self.wait(cond, timeout_s, "a settled state")
        except ScenarioError:
            return None

    def controller(self) -> int:
        """The controller's broker id (waits until there is one)."""
        assert self.zk is not None
        return self.wait(lambda: self.zk.controller(), 30, "a controller")

    def state(self) -> Any:
        """The partition state znode of the scenario's topic (leader, leader epoch, ISR)."""
        assert self.zk is not None
        return self.zk.partition_state(TOPIC, 0)

    def replica(self, b: int) -> dict | None:
        """Broker ``b``'s own report of its replica (replica_state), None when it does not answer."""
        host, port = self.brokers[b]
        try:
            r = post(host, port, "replica_state", {"partitions": [{"topic": TOPIC, "partition": 0}],
                                                   "checksum_upto": None}, timeout_s=2.0)
        except Exception:
            return None
        reps = r.get("replicas") or []
        return reps[0] if reps else None

    def segments(self, b: int) -> dict[int, tuple[str, int]]:
        """Broker ``b``'s log from its segment files."""
        return read_segments(load(self.dir).broker(b).data_dir or "", TOPIC, 0)

    def alive(self, b: int) -> bool:
        return launcher.proc_state(load(self.dir).broker(b).pid) == "running"

    def metric(self, b: int, name: str) -> float | None:
        """One value of broker ``b``'s /metrics, None when it does not answer."""
        host, port = self.brokers[b]
        try:
            with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=3) as r:
                for line in r.read().decode().splitlines():
                    if line.startswith(name + " "):
                        return float(line.split()[1])
        except OSError:
            return None
        return None

    def events(self, b: int, kinds: tuple[str, ...], since: float = 0.0) -> list[str]:
        """Broker ``b``'s own events of these kinds about the topic since ``since`` (a
        time.time()), from its event timeline."""
        host, port = self.brokers[b]
        try:
            got = post(host, port, "events", {"since": since, "cluster": False, "limit": 5000}, timeout_s=3.0)
        except Exception:
            return []
        return [e["text"] for e in got.get("events") or () if e["kind"] in kinds and f"{TOPIC}-0" in e["text"]]

    # -- acting ----------------------------------------------------------------------------------
    def create_topic(self, replicas: list[int]) -> None:
        from ..client.sync import Admin
        with Admin(self.bootstrap) as admin:
            admin.create_topic(TOPIC, 1, len(replicas), config={"min.insync.replicas": "1",
                                                               "unclean.leader.election.enable": "false"},
                               assignment={0: replicas})
        self.wait(lambda: (st := self.state()) is not None and st.leader == replicas[0]
                  and sorted(st.isr) == sorted(replicas), 30, f"leader {replicas[0]} and ISR {sorted(replicas)}")

    def produce(self, value: str, acks: str = "all", timeout_s: float = 20.0) -> int:
        """Write one record and wait for its acknowledgement; returns its offset (recorded)."""
        from ..client.sync import Producer
        bootstrap = ",".join(f"{h}:{p}" for b, (h, p) in sorted(self.brokers.items()) if b not in self.avoid)
        with Producer(bootstrap, acks=acks, linger_ms=0, enable_idempotence=False, request_timeout_ms=4000,
                      delivery_timeout_ms=int(timeout_s * 1000), retry_backoff_ms=100,
                      client_id="live-scenario") as p:
            md = p.send(TOPIC, value.encode(), partition=0).result(timeout_s + 5)
        (self.acked if acks == "all" else self.written).append((md.offset, value))
        return md.offset

    def reassign(self, replicas: list[int]) -> None:
        """A reassignment to the same replicas in another order (the controller bumps the
        leader epoch and sends LeaderAndIsr, the leader stays)."""
        from ..client.sync import Admin
        from ..client.types import TopicPartition
        before = self.state().leader_epoch
        with Admin(self.bootstrap) as admin:
            out = admin.alter_partition_reassignments({TopicPartition(TOPIC, 0): replicas})
        err = next(iter(out.values()), None)
        if err is not None:
            raise ScenarioError(f"reassignment to {replicas} refused: {err}")
        self.wait(lambda: self.state().leader_epoch > before, 20, f"the reassignment to {replicas}")

    def elect_preferred(self, expected: int) -> None:
        """A preferred leader election (the first replica leads at epoch + 1)."""
        from ..client.sync import Admin
        from ..client.types import TopicPartition
        with Admin(self.bootstrap) as admin:
            out = admin.elect_leaders([TopicPartition(TOPIC, 0)])
        err = next(iter(out.values()), None)
        if err is not None:
            raise ScenarioError(f"preferred election refused: {err}")
        self.wait(lambda: self.state().leader == expected, 20, f"broker {expected} leading")

    def caught_up(self, replicas: list[int], timeout_s: float = 60.0) -> None:
        """Until every replica is in the ISR, answers, and has the leader's LEO as LEO and HW."""
        def done() -> bool:
            st = self.state()
            if sorted(st.isr) != sorted(replicas):
                return False
            reps = [self.replica(b) for b in replicas]
            if any(r is None for r in reps):
                return False
            leo = next(r["log_end_offset"] for r, b in zip(reps, replicas) if b == st.leader)
            return all(r["log_end_offset"] == leo and r["high_watermark"] == leo for r in reps)
        self.wait(done, timeout_s, f"replicas {replicas} all in the ISR with the leader's LEO and HW")

    def wait_role(self, b: int, role: str, epoch: int, timeout_s: float = 20.0) -> dict:
        """Until broker ``b`` reports itself ``role`` at leader epoch ``epoch``."""
        return self.wait(lambda: (r := self.replica(b)) is not None and r["role"] == role
                         and r["leader_epoch"] == epoch and r, timeout_s, f"broker {b} {role} at epoch {epoch}")

    def cut(self, src: int | str, dst: int | str, **kw: Any) -> Cut:
        """A link cut between brokers (or "zk") by id; see :meth:`Links.cut`."""
        assert self.links is not None and self.net is not None
        ends = [self.net.zookeeper if x == "zk" else self.net.brokers[int(x)] for x in (src, dst)]
        c = self.links.cut(ends[0], ends[1], **kw)
        return c

    def heal(self) -> None:
        assert self.links is not None
        self.links.heal()

    # -- narration ----------------------------------------------------------------------------------
    def snapshot(self, replicas: list[int]) -> list[str]:
        """The controller's view (ZooKeeper) and each replica's own (replica_state, segment files)."""
        st = self.state()
        acked = ", ".join(f"{v}@{o}" for o, v in self.acked) or "none"
        out = [f"    partition state: leader {st.leader}, leader epoch {st.leader_epoch}, ISR {list(st.isr)}; "
               f"acknowledged (acks=all): {acked}"]
        for b in replicas:
            recs = " ".join(f"{o}:{v}(e{e})" for o, (v, e) in sorted(self.segments(b).items())) or "(empty)"
            r = self.replica(b) if self.alive(b) else None
            if r is None:
                head = "down" if not self.alive(b) else "not answering"
                out.append(f"    broker {b}: {head:<27} segment files [{recs}]")
            else:
                out.append(f"    broker {b}: {r['role']:<8} epoch {r['leader_epoch']:<2} LEO {r['log_end_offset']}  "
                           f"HW {r['high_watermark']}  epochs {r['epochs']}  log [{recs}]")
        return out

    def verdict_checks(self, replicas: list[int]) -> tuple[list[str], list[str]]:
        """(problems, notes): acknowledged records not at their offset in the final log or
        in a replica's files, and replicas that differ below the HW."""
        problems: list[str] = []
        notes: list[str] = []
        final = read_final_log(self.bootstrap, TOPIC, 1, timeout_s=30)[0]
        for off, value in self.acked:
            if final.get(off) != value:
                problems.append(f"acknowledged {value} (offset {off}) LOST: the log has "
                                f"{final.get(off)!r} there")
        same, desc = compare_replicas(self.brokers, TOPIC, 0, replicas)
        notes.append(desc)
        logs = {b: self.segments(b) for b in replicas}
        hw = min((self.replica(b) or {}).get("high_watermark", 0) for b in replicas)
        differ = sorted({o for o in range(hw) for b in replicas if logs[b].get(o, ("", 0))[0] != logs[replicas[0]].get(o, ("", 0))[0]})
        if differ or not same:
            where = differ[0] if differ else None
            what = ", ".join(f"broker {b} has {logs[b].get(where, ('nothing', 0))[0]}" for b in replicas) if differ else desc
            problems.append("replicas DIVERGED" + (f" at offset {where}: {what}" if differ else f": {desc}"))
        return problems, notes


# ---------------------------------------------------------------- the scenarios

def _hold_back_hw(c: LiveCluster, leader: int, follower: int, value: str, step: Callable[[str, list[int]], None],
                  replicas: list[int]) -> int:
    """Produce ``value`` with acks=all and cut the leader and the follower apart at once:
    the follower has the record, the leader's answer that would give it the new HW is
    dropped.  Retried (a few times) if that answer got through first."""
    for attempt in range(3):
        off = c.produce(value if attempt == 0 else f"{value}.{attempt}")
        c.cut(leader, follower, both_ways=True)
        f, ld = c.replica(follower), c.replica(leader)
        if f and ld and f["log_end_offset"] == off + 1 and f["high_watermark"] == off and ld["high_watermark"] == off + 1:
            step(f"produce {c.acked[-1][1]} with acks=all: acknowledged at offset {off} (broker {leader}'s HW is now "
                 f"{off + 1}, since broker {follower} fetched past it); at once cut the links between brokers "
                 f"{leader} and {follower} both ways: the answer that would tell broker {follower} HW {off + 1} "
                 f"is dropped, so its HW stays {off}", replicas)
            return off
        c.heal()
        c.wait(lambda: (r := c.replica(follower)) is not None and r["high_watermark"] == r["log_end_offset"]
               == (c.replica(leader) or {}).get("log_end_offset"), 20, "the follower to catch up again")
    raise ScenarioError("the follower learned the new HW before the cut three times: the machine is too slow for "
                        "the 2.5 s window")


def _setup(c: LiveCluster, replicas: list[int], values: list[str], step: Callable[[str, list[int]], None]) -> None:
    c.create_topic(replicas)
    for v in values:
        c.produce(v)
    n = len(values)
    c.wait(lambda: all((r := c.replica(b)) is not None and r["high_watermark"] == n for b in replicas), 20,
           f"HW {n} on every replica")
    step(f"topic {TOPIC} with replicas {replicas} (leader {replicas[0]}), min.insync.replicas=1; "
         f"{', '.join(values)} produced with acks=all; every replica has HW {n}", replicas)


def kip101_loss(c: LiveCluster, step: Callable[[str, list[int]], None]) -> list[str]:
    """KIP-101 scenario 1 on live processes; returns the problems found."""
    ctrl = c.controller()
    a, b = [x for x in sorted(c.brokers) if x != ctrl][:2]
    replicas = [a, b]
    c.say(f"- broker {ctrl} is the controller; the partition's replicas are brokers {a} (leader) and {b}")
    _setup(c, replicas, ["m1", "m2", "m3"], step)
    off = _hold_back_hw(c, a, b, "m4", step, replicas)
    epoch = c.state().leader_epoch
    c.reassign([b, a])
    r = c.wait_role(b, "follower", epoch + 1)
    kept = r["log_end_offset"] > off
    step(f"the controller bumps the leader epoch (a reassignment reorders the replicas to [{b}, {a}]; broker {a} "
         f"stays leader): broker {b} becomes follower at epoch {epoch + 1} and " +
         ("truncates to its HW" if c.truncation == "high_watermark" else
          f"must ask broker {a} for the end offset of its epoch first (OffsetsForLeaderEpoch), which the cut drops")
         + f": its LEO is {r['log_end_offset']}" + ("" if kept else f", {c.acked[-1][1]} is gone from it"), replicas)
    launcher.kill(c.dir, a, "KILL")
    c.wait(lambda: c.state().leader == b, 30, f"broker {b} elected after broker {a}'s session expired")
    r = c.wait_role(b, "leader", c.state().leader_epoch)
    step(f"kill -9 broker {a}, the leader, before broker {b} could fetch again; when its ZooKeeper session expires "
         f"the controller elects broker {b}, the only ISR member left, at epoch {r['leader_epoch']} with LEO "
         f"{r['log_end_offset']}", replicas)
    off5 = c.produce("m5")
    step(f"produce m5 with acks=all: broker {b} acknowledges it at offset {off5}", replicas)
    c.heal()
    since = time.time()
    launcher.start(c.dir, a, wait=True, timeout_s=60)
    c.caught_up(replicas)
    truncs = c.events(a, ("truncate",), since)
    step(f"heal the links and restart broker {a}: it follows broker {b}"
         + (f" ({truncs[-1]})" if truncs else ", truncating nothing") + ", catches up and rejoins the ISR", replicas)
    return []


def kip279_flipflop(c: LiveCluster, step: Callable[[str, list[int]], None]) -> list[str]:
    """KIP-279: fast leader flips between two brokers whose fetchers are cut off."""
    ctrl = c.controller()
    a, b = [x for x in sorted(c.brokers) if x != ctrl][:2]
    replicas = [a, b]
    c.say(f"- broker {ctrl} is the controller; the partition's replicas are brokers {a} (leader) and {b}")
    _setup(c, replicas, ["m1", "m2", "m3"], step)
    _hold_back_hw(c, a, b, "m4", step, replicas)
    order = [(b, a, "b1"), (a, b, "a1"), (b, a, "y")]
    for i, (new, old, value) in enumerate(order, 1):
        c.reassign([new, old])
        c.elect_preferred(new)
        epoch = c.state().leader_epoch
        c.wait_role(new, "leader", epoch)
        c.wait_role(old, "follower", epoch)
        off = c.produce(value, acks="1")
        step(f"flip {i}: a reassignment to [{new}, {old}] and a preferred election make broker {new} leader at "
             f"epoch {epoch} (two LeaderAndIsr to each broker, both fetchers still cut off); produce {value} with "
             f"acks=1: broker {new} writes it at offset {off}", replicas)
    since = time.time()
    c.heal()
    c.caught_up(replicas)
    truncs = c.events(a, ("truncate",), since)
    step(f"heal the links: broker {a} fetches from broker {b} again" +
         (": " + "; then ".join(truncs) if truncs else ", truncating nothing"), replicas)
    return []


@dataclass
class _Zombie:
    """kip320-zombie's brokers, A (the leader), B (leader for a while) and Z (the zombie), and
    what the steps leave for the next ones."""

    a: int
    b: int
    z: int
    off: int = -1  # x's offset: A and Z write it, B never gets it
    fenced0: float = 0.0  # Z's fenced fetches before it became a zombie
    epoch: int = -1  # A's leader epoch once leadership is back
    z_epoch: Any = "?"  # the leader epoch Z still follows A at
    z_leo0: int = -1  # Z's log end then
    fenced: float = 0.0  # Z's fetches refused since fenced0

    @property
    def replicas(self) -> list[int]:
        return [self.a, self.b, self.z]


def kip320_zombie(c: LiveCluster, step: Callable[[str, list[int]], None]) -> list[str]:
    """KIP-320: a follower that misses the controller's LeaderAndIsr keeps fetching at its old epoch."""
    zm = _zombie_setup(c, step)
    _zombie_leader_b(c, zm, step)
    _zombie_leader_a_again(c, zm, step)
    problems = _zombie_fetches(c, zm, step)
    _zombie_heal(c, zm, step)
    if c.truncation == "leader_epoch" and zm.fenced <= 0:
        problems.append(f"broker {zm.z}'s stale fetches were not refused")
    return problems


def _zombie_setup(c: LiveCluster, step: Callable[[str, list[int]], None]) -> _Zombie:
    """The partition on A, B and Z; x written by A and copied by Z, not by B (cut off from A)."""
    ctrl = c.controller()
    a, b, z = [x for x in sorted(c.brokers) if x != ctrl][:3]
    zm = _Zombie(a, b, z)
    replicas = zm.replicas
    c.say(f"- broker {ctrl} is the controller; the partition's replicas are brokers {a} (leader), {b} and {z} "
          f"(the zombie-to-be)")
    c.avoid.add(z)
    _setup(c, replicas, ["m1", "m2"], step)
    lag = c.cut(b, a, both_ways=True)
    off = zm.off = c.produce("x", acks="1")
    c.wait(lambda: (r := c.replica(z)) is not None and r["log_end_offset"] == off + 1, 20, f"broker {z} fetching x")
    step(f"cut the links between brokers {b} and {a}; produce x with acks=1: broker {a} writes it at offset {off} and "
         f"broker {z} copies it, broker {b} does not (x is not committed)", replicas)
    c.cut(ctrl, z, only="requests", reject=True)
    zm.fenced0 = c.metric(z, FENCED) or 0.0
    c.reassign([b, a, z])
    c.elect_preferred(b)
    c.links.heal(lag)  # type: ignore[union-attr]
    return zm


def _zombie_leader_b(c: LiveCluster, zm: _Zombie, step: Callable[[str, list[int]], None]) -> None:
    """B leads (Z, whose controller requests are refused, never hears of it); A truncates x
    and copies y from B."""
    a, b, z, off = zm.a, zm.b, zm.z, zm.off
    epoch = c.state().leader_epoch
    c.wait_role(a, "follower", epoch)
    c.wait(lambda: (r := c.replica(a)) is not None and r["log_end_offset"] == off, 20, f"broker {a} truncating x")
    off_y = c.produce("y", acks="1")
    c.wait(lambda: (r := c.replica(a)) is not None and r["log_end_offset"] == off_y + 1, 20, f"broker {a} fetching y")
    rz = c.replica(z)
    step(f"cut the controller's requests to broker {z} (refused); a reassignment and a preferred election make "
         f"broker {b} leader at epoch {epoch}; heal the links between brokers {a} and {b}: broker {a} follows "
         f"broker {b} and truncates x; "
         f"produce y: broker {b} writes it at offset {off_y}. Broker {z} never heard of any of it: it still "
         f"thinks it follows broker {a} at epoch {rz['leader_epoch'] if rz else '?'}", zm.replicas)


def _zombie_leader_a_again(c: LiveCluster, zm: _Zombie, step: Callable[[str, list[int]], None]) -> None:
    """Leadership back to A, which writes v and w while Z's fetches are held back; then Z's
    fetches go through again."""
    a, b, z = zm.a, zm.b, zm.z
    # Z's fetches are held back (refused) while leadership returns to A and A writes: a
    # fetch from Z's offset reaching A before A's log is that long would be answered
    # OFFSET_OUT_OF_RANGE, and Z would cut its log to A's end instead of appending to it
    hold = c.cut(z, a, only="requests", reject=True)
    since = time.time()
    c.reassign([a, b, z])
    c.elect_preferred(a)
    epoch = zm.epoch = c.state().leader_epoch
    c.wait_role(a, "leader", epoch)
    off_v = c.produce("v", acks="1")
    off_w = c.produce("w", acks="1")
    c.wait(lambda: (r := c.replica(b)) is not None and r["log_end_offset"] == off_w + 1, 20, f"broker {b} fetching w")
    truncs = c.events(a, ("truncate",), since) + c.events(b, ("truncate",), since)
    rz = c.replica(z)
    ze = zm.z_epoch = rz["leader_epoch"] if rz else "?"
    z_leo0 = zm.z_leo0 = rz["log_end_offset"] if rz else zm.off + 1
    step(f"cut broker {z}'s requests to broker {a} (refused); leadership back to broker {a} at epoch {epoch} (a "
         f"reassignment and a preferred election)" + (" (" + "; ".join(truncs) + ")" if truncs else "") +
         f"; produce v and w: broker {a} writes them at offsets {off_v} and {off_w}. Broker {z} still thinks it "
         f"follows broker {a} at epoch {ze}, with log end {z_leo0}", zm.replicas)
    c.links.heal(hold)  # type: ignore[union-attr]


def _zombie_fetches(c: LiveCluster, zm: _Zombie, step: Callable[[str, list[int]], None]) -> list[str]:
    """What became of the zombie's fetches from A (refused, or served); the problem of a
    zombie that appended A's records after a tail of its own."""
    a, z, z_leo0, epoch, ze, fenced0 = zm.a, zm.z, zm.z_leo0, zm.epoch, zm.z_epoch, zm.fenced0

    def outcome() -> str | None:
        n = c.metric(z, FENCED)
        if n is not None and n > fenced0 + 1:
            return "refused"
        r = c.replica(z)
        return "served" if r is not None and r["log_end_offset"] != z_leo0 else None

    how = c.wait(outcome, 30, f"broker {z}'s fetches from broker {a} refused (fenced) or answered")
    if how == "served":
        # let the zombie's fetches go on until its HW is the leader's: what it now takes as committed
        c.settle(lambda: (rz2 := c.replica(z)) is not None and (ra := c.replica(a)) is not None
                 and rz2["high_watermark"] == ra["high_watermark"] == ra["log_end_offset"], 20)
    rz, ra = c.replica(z), c.replica(a)
    fenced = zm.fenced = (c.metric(z, FENCED) or fenced0) - fenced0
    zlog = {o: v for o, (v, _) in sorted(c.segments(z).items())}
    alog = {o: v for o, (v, _) in sorted(c.segments(a).items())}
    z_leo = rz["log_end_offset"] if rz else max(zlog, default=-1) + 1
    z_hw = rz["high_watermark"] if rz else None
    appended = [(o, zlog[o]) for o in range(z_leo0, z_leo) if o in zlog]
    own = [o for o in range(min(z_leo0, z_leo)) if zlog.get(o) != alog.get(o)]
    c.facts.update(fenced_fetches=fenced, zombie_leo=z_leo, zombie_hw=z_hw, zombie_log=zlog, leader_log=alog,
                   zombie_served=how == "served")
    carries = ("carry no leader epoch (current_leader_epoch -1: high_watermark mode, a broker from before "
               "KIP-320)" if c.truncation == "high_watermark" else f"carry its leader epoch {ze}")
    problems = []
    if appended and own:
        o = own[0]
        recs = ", ".join(f"{v} (offset {p})" for p, v in appended)
        problems.append(f"broker {z}, a zombie follower at epoch {ze}, was served by broker {a} at epoch {epoch}: it "
                        f"appended {recs} after its own {zlog.get(o)} (offset {o}), which broker {a} does not have "
                        f"(it has {alog.get(o)!r} there)"
                        + (f", and took HW {z_hw} from it" if z_hw is not None and z_hw > o else ""))
    if how == "served":
        step(f"heal broker {z}'s requests to broker {a}: broker {z}, the zombie, fetches from offset {z_leo0}; "
             f"its fetches {carries}, so broker {a} serves them (broker {z}'s minikafka_fenced_fetches_total: "
             f"+{fenced:g})"
             + (f": broker {z} appends {', '.join(f'{v} at offset {p}' for p, v in appended)} after its own "
                f"{zlog.get(own[0])} at offset {own[0]}, where broker {a} has {alog.get(own[0])}" if appended and own
                else f": broker {z}'s log end is now {z_leo}")
             + f"; broker {a}'s HW, which counts broker {z} (in the ISR) as holding offsets up to {z_leo - 1}, is "
             f"{ra['high_watermark'] if ra else '?'}, and broker {z}'s HW is {z_hw}", zm.replicas)
    else:
        step(f"heal broker {z}'s requests to broker {a}: broker {z}, the zombie, fetches from broker {a} from offset "
             f"{z_leo0}; its fetches {carries}, and broker {a} refuses every such fetch with FENCED_LEADER_EPOCH "
             f"(broker {z}'s minikafka_fenced_fetches_total: +{fenced:g})"
             + (f", so broker {z} appends nothing after its own x (log end {z_leo})" if z_leo == z_leo0 else
                f"; broker {z}'s log end is now {z_leo}"), zm.replicas)
    return problems


def _zombie_heal(c: LiveCluster, zm: _Zombie, step: Callable[[str, list[int]], None]) -> None:
    """Every fault healed: the controller's queued requests reach Z, which follows A and catches up."""
    z, off, replicas = zm.z, zm.off, zm.replicas
    since = time.time()
    c.heal()
    c.wait_role(z, "follower", zm.epoch, 30)
    c.caught_up(replicas)
    truncs = c.events(z, ("truncate",), since)
    kept = c.segments(z).get(off, ("", 0))[0] == "x"
    step(f"heal: the controller's queued LeaderAndIsr requests reach broker {z}, which follows broker {zm.a} at epoch "
         f"{zm.epoch}" + (f" ({'; then '.join(truncs)})" if truncs else ", truncating nothing,")
         + " and catches up" + (f"; its files still hold x at offset {off}" if kept else ""), replicas)


SCENARIOS: dict[str, tuple[Callable[[LiveCluster, Callable[[str, list[int]], None]], list[str]], int, str]] = {
    "kip101-loss": (kip101_loss, 3, "a follower with a lagging HW becomes follower at a new epoch while cut off "
                                    "from the leader, then the leader dies"),
    "kip279-flipflop": (kip279_flipflop, 3, "leadership flips between two brokers whose fetchers are cut off"),
    "kip320-zombie": (kip320_zombie, 4, "a follower misses the controller's LeaderAndIsr and keeps fetching "
                                        "at its old epoch"),
}


def run(name: str, truncation: str, say: Callable[[str], None] | None = None, keep: bool = False) -> LiveResult:
    """Run live scenario ``name`` with ``replication.truncation=truncation`` and return its
    result; ``say`` gets each line of the trace as it happens.  Raises
    :class:`~minikafka.chaos.links.LinkFaultError` when link faults cannot run here."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown live scenario {name!r}: choose from {', '.join(sorted(SCENARIOS))}")
    if truncation not in TRUNCATIONS:
        raise ValueError(f"truncation must be one of {', '.join(TRUNCATIONS)}")
    check_available()
    fn, brokers, _ = SCENARIOS[name]
    result = LiveResult(name, truncation)
    out = say or (lambda line: None)

    def line(text: str) -> None:
        result.lines.append(text)
        out(text)

    t0 = time.monotonic()
    cluster = LiveCluster(truncation, brokers, line, keep=keep)
    replicas_seen: list[int] = []

    def step(text: str, replicas: list[int]) -> None:
        replicas_seen[:] = replicas
        line(f"- [{time.monotonic() - t0:5.1f}s] {text}")
        for s in cluster.snapshot(replicas):
            line(s)

    try:
        with cluster:
            problems = fn(cluster, step)
            checks, notes = cluster.verdict_checks(replicas_seen)
            problems += checks
            for n in notes:
                line(f"    check: {n}")
            result.completed = True
            result.anomaly = bool(problems)
            acked = ", ".join(v for _, v in cluster.acked)
            result.verdict = ("ANOMALY: " + "; ".join(problems)) if problems else \
                (f"PASS: every acknowledged record ({acked}) is at its offset and the replicas are identical"
                 + (f"; the zombie's stale fetches were refused {cluster.facts['fenced_fetches']:g} times"
                    if cluster.facts.get("fenced_fetches", 0) > 0 else "")
                 + (f" ({cluster.facts['note']})" if "note" in cluster.facts else ""))
            result.facts = dict(cluster.facts)
    except ScenarioError as exc:
        result.verdict = f"INCOMPLETE: {exc} (cluster files kept in {cluster.tmp})"
    finally:
        result.elapsed_s = time.monotonic() - t0
        result.dir = cluster.tmp if (cluster.failed or keep) else ""
    return result
