"""Fault injection against a live local cluster: does any acknowledged record get lost?

:func:`run` starts (or uses) a 3-broker cluster, creates a topic with
replication factor 3 and ``min.insync.replicas=2`` (unclean election off), and
runs, at the same time:

* producers with ``acks=all`` writing unique values ``p{producer}-{seq}``; every
  acknowledgement is recorded as ``(partition, offset, value)``;
* consumers reading every partition from the beginning, recording every
  ``(partition, offset, value)`` they are handed;
* a *nemesis* that injects a fault every few seconds, chosen at random from a
  seeded generator: ``kill -9`` of a random broker, of a partition leader or of
  the controller (restarted a few seconds later), SIGSTOP then SIGCONT of a
  broker (sometimes for longer than the ZooKeeper session timeout), SIGTERM
  (controlled shutdown) then restart, and "follower then leader" controlled
  shutdowns in quick succession (the KIP-101 window).  At most two brokers are
  down at once, usually one.

Then it heals the cluster (resume and restart everything, wait until every
partition has all three replicas in its ISR) and checks that

1. every acknowledged record is in the final log at its acknowledged
   ``(partition, offset)`` with its value (``lost`` counts those that are not);
2. the replicas of every partition are identical up to the high watermark
   (checksums of the ``replica_state`` API);
3. no consumer read a record that later vanished: every ``(partition, offset,
   value)`` a consumer saw is in the final log at that offset.

The outcome is a :class:`Summary`; ``Summary.line()`` is the one-line report of
``scripts/chaos.py``::

    acked=30146 lost=0 duplicated=0 faults=30 leader_elections=28 unclean=0 longest_unavailable_ms=8074 ok=true

``duplicated`` counts values present more than once in the final log.  The producers
are idempotent (the default with acks=all), so a retry never writes a record twice and
any duplicate fails the run; with ``idempotence=False`` (``--no-idempotence``) a retry
after an indefinite error may write a record twice, which is then not a failure.
``leader_elections`` and ``unclean`` count ``leader_elected`` and
``unclean_election`` events gathered from every broker's event timeline while the
run goes on.  ``longest_unavailable_ms`` is the longest time without any
successful produce acknowledgement.
"""
from __future__ import annotations

import json
import random
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .cluster import launcher
from .cluster.launcher import _ZkReader
from .cluster.state import exists, load
from .errors import KafkaError
from .rpc import call_sync
from .zk import layout

SCENARIOS = ("random", "kip101")
TRUNCATIONS = ("leader_epoch", "high_watermark")

# Broker settings that make failures visible quickly.
FAST_SETTINGS = {
    "replica.lag.time.max.ms": "3000",
    "zookeeper.session.timeout.ms": "4000",
    "replica.high.watermark.checkpoint.interval.ms": "1000",
    "replica.fetch.backoff.ms": "200",
    "unclean.leader.election.enable": "false",
}

# The fault phase ends with a problem when no fault could be injected for this long
# (faults wait for brokers to come back, and the kip101 scenario for full ISRs).
STALL_S = 90.0

# Broker process states as the nemesis tracks them.
UP, PAUSED, DEAD, TERMINATING, STARTING = "up", "paused", "dead", "terminating", "starting"


@dataclass
class Summary:
    """What a chaos run found.  ``ok`` is True when nothing acknowledged was lost and
    every check passed."""

    acked: int = 0
    lost: int = 0
    duplicated: int = 0
    faults: int = 0
    leader_elections: int = 0
    unclean: int = 0
    longest_unavailable_ms: int = 0
    ok: bool = False
    failed: int = 0  # produce attempts that ended in an error (not acknowledged)
    unresolved: int = 0  # neither acknowledged nor failed when the producers stopped
    consumed: int = 0  # distinct (partition, offset) pairs the consumers read
    vanished_reads: int = 0  # distinct (partition, offset, value) reads that are not in the final log
    divergent: list[str] = field(default_factory=list)
    healed: bool = False
    lost_records: list[tuple[int, int, str]] = field(default_factory=list)
    vanished: list[tuple[int, int, str, str | None]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    fault_log: list[str] = field(default_factory=list)
    epoch_bumps: int = 0
    final_offsets: dict[int, int] = field(default_factory=dict)
    elapsed_s: float = 0.0
    dir: str = ""
    seed: int = 0
    truncation: str = "leader_epoch"
    storage: str = "disk"

    def line(self) -> str:
        """The one-line report."""
        return (f"acked={self.acked} lost={self.lost} duplicated={self.duplicated} faults={self.faults} "
                f"leader_elections={self.leader_elections} unclean={self.unclean} "
                f"longest_unavailable_ms={self.longest_unavailable_ms} ok={'true' if self.ok else 'false'}")

    def details(self) -> str:
        """Several lines: the faults injected and every problem found."""
        out = [f"seed={self.seed} truncation={self.truncation} storage={self.storage} elapsed_s={self.elapsed_s:.1f} "
               f"failed={self.failed} unresolved={self.unresolved} consumed={self.consumed} "
               f"vanished_reads={self.vanished_reads} epoch_bumps={self.epoch_bumps} healed={self.healed} "
               f"final_offsets={self.final_offsets} dir={self.dir}"]
        out += [f"fault: {f}" for f in self.fault_log]
        out += [f"problem: {p}" for p in self.problems]
        out += [f"lost: partition {p} offset {o} value {v}" for p, o, v in self.lost_records[:20]]
        out += [f"vanished read: partition {p} offset {o} read {v!r}, final log has {f!r}" for p, o, v, f in self.vanished[:20]]
        return "\n".join(out)


# ---------------------------------------------------------------- small helpers

def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _free_block(count: int, avoid: int) -> int:
    for _ in range(200):
        base = _free_port()
        ports = range(base, base + count)
        if base + count < 65536 and avoid not in ports and all(launcher.port_free(p) for p in ports):
            return base
    raise RuntimeError(f"no block of {count} free ports found")


def post(host: str, port: int, api: str, body: dict, timeout_s: float = 3.0) -> dict:
    """One protocol request with a blocking HTTP client (for introspection)."""
    return call_sync(host, port, api, body, timeout_s, raise_error=False)


class _Zk(_ZkReader):
    """The launcher's ZooKeeper reader, but connecting lazily, reconnecting after a
    failure and raising it (the harness retries), for the harness's own reads."""

    def __init__(self, connect: str) -> None:
        self.connect = connect
        self.client = None
        self.lock = threading.Lock()

    def _client(self):
        if self.client is None or not self.client.connected:
            self.close()
            from .zk.launcher import probe_client
            self.client = probe_client(self.connect, timeout_s=5.0)
        return self.client

    def get(self, path: str) -> tuple[bytes, Any] | None:
        with self.lock:
            try:
                return self._client().get(path)
            except Exception as exc:
                if type(exc).__name__ == "NoNodeError":
                    return None
                self.close()
                raise

    def children(self, path: str) -> list[str]:
        with self.lock:
            try:
                return self._client().get_children(path)
            except Exception as exc:
                if type(exc).__name__ == "NoNodeError":
                    return []
                self.close()
                raise

    def partition_state(self, topic: str, partition: int) -> layout.LeaderIsr | None:
        got = self.get(layout.partition_state_path(topic, partition))
        return layout.LeaderIsr.decode(got[0]) if got else None


# ---------------------------------------------------------------- workload

class Workload:
    """Producer and consumer threads and what they observed."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, producers: int, consumers: int,
                 rate_per_producer: float, log: Callable[[str], None], idempotence: bool = True) -> None:
        self.bootstrap = bootstrap
        self.idempotence = idempotence
        self.topic = topic
        self.partitions = partitions
        self.n_producers = producers
        self.n_consumers = consumers
        self.rate = rate_per_producer
        self.log = log
        self.stop_producing = threading.Event()
        self.stop_consuming = threading.Event()
        self.lock = threading.Lock()
        self.acked: list[tuple[int, int, str, float]] = []  # partition, offset, value, monotonic time
        self.failed = 0
        self.sent = 0
        self.errors: dict[str, int] = {}
        self.reads: dict[tuple[int, int], set[str]] = {}  # (partition, offset) -> every value read there
        self.threads: list[threading.Thread] = []
        self.started_at = 0.0
        self.stopped_at = 0.0
        self.problems: list[str] = []

    def start(self) -> None:
        self.started_at = time.monotonic()
        for i in range(self.n_producers):
            t = threading.Thread(target=self._produce, args=(i,), name=f"chaos-producer-{i}", daemon=True)
            t.start()
            self.threads.append(t)
        for i in range(self.n_consumers):
            t = threading.Thread(target=self._consume, args=(i,), name=f"chaos-consumer-{i}", daemon=True)
            t.start()
            self.threads.append(t)

    def _on_done(self, fut: Any, partition: int, value: str, window: threading.Semaphore) -> None:
        window.release()
        exc = fut.exception()
        with self.lock:
            if exc is None:
                md = fut.result()
                self.acked.append((md.partition, md.offset, value, time.monotonic()))
            else:
                self.failed += 1
                name = type(exc).__name__
                self.errors[name] = self.errors.get(name, 0) + 1

    def _produce(self, index: int) -> None:
        from .client.sync import Producer

        window = threading.Semaphore(200)
        try:
            producer = Producer(self.bootstrap, acks="all", linger_ms=5, request_timeout_ms=8000,
                                delivery_timeout_ms=60000, retry_backoff_ms=100, client_id=f"chaos-producer-{index}",
                                enable_idempotence=self.idempotence)
        except Exception as exc:
            self.problems.append(f"producer {index} could not start: {exc}")
            return
        seq = 0
        interval = 1.0 / self.rate if self.rate > 0 else 0.0
        next_at = time.monotonic()
        try:
            while not self.stop_producing.is_set():
                if not window.acquire(timeout=0.2):
                    continue
                value = f"p{index}-{seq}"
                partition = (seq + index) % self.partitions
                try:
                    fut = producer.send(self.topic, value, partition=partition)
                except Exception as exc:
                    window.release()
                    self.problems.append(f"producer {index}: send failed: {exc}")
                    break
                with self.lock:
                    self.sent += 1
                fut.add_done_callback(lambda f, p=partition, v=value: self._on_done(f, p, v, window))
                seq += 1
                if interval:
                    next_at = max(next_at + interval, time.monotonic() - 1.0)
                    delay = next_at - time.monotonic()
                    if delay > 0:
                        self.stop_producing.wait(delay)
        finally:
            try:
                producer.flush(timeout=70)
            except Exception as exc:
                self.log(f"producer {index}: flush: {exc}")
            try:
                producer.close(timeout=5)
            except Exception:
                pass

    def _consume(self, index: int) -> None:
        from .client.sync import Consumer
        from .client.types import TopicPartition

        tps = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        positions: dict[int, int] = {}
        while not self.stop_consuming.is_set():
            try:
                consumer = Consumer(self.bootstrap, auto_offset_reset="earliest", request_timeout_ms=8000,
                                    fetch_max_wait_ms=300, client_id=f"chaos-consumer-{index}")
            except Exception as exc:
                self.log(f"consumer {index}: could not start: {exc}")
                self.stop_consuming.wait(1.0)
                continue
            try:
                consumer.assign(tps)
                for tp in tps:
                    if tp.partition in positions:
                        consumer.seek(tp, positions[tp.partition])
                while not self.stop_consuming.is_set():
                    for r in consumer.poll(timeout_ms=300):
                        value = r.value.decode() if r.value is not None else ""
                        key = (r.partition, r.offset)
                        with self.lock:
                            self.reads.setdefault(key, set()).add(value)
                        positions[r.partition] = r.offset + 1
            except Exception as exc:
                self.log(f"consumer {index}: {type(exc).__name__}: {exc}; restarting it")
                self.stop_consuming.wait(0.5)
            finally:
                try:
                    consumer.close()
                except Exception:
                    pass

    def stop_producers(self, timeout_s: float = 90.0) -> None:
        self.stop_producing.set()
        self.stopped_at = time.monotonic()
        deadline = time.monotonic() + timeout_s
        for t in self.threads:
            if t.name.startswith("chaos-producer"):
                t.join(max(0.1, deadline - time.monotonic()))

    def stop_consumers(self, timeout_s: float = 20.0) -> None:
        self.stop_consuming.set()
        deadline = time.monotonic() + timeout_s
        for t in self.threads:
            if t.name.startswith("chaos-consumer"):
                t.join(max(0.1, deadline - time.monotonic()))

    def longest_gap_ms(self) -> int:
        """Longest time without any acknowledgement between the start and the stop of producing."""
        with self.lock:
            times = sorted(a[3] for a in self.acked)
        end = self.stopped_at or time.monotonic()
        points = [self.started_at] + [t for t in times if self.started_at <= t <= end] + [end]
        return int(max(b - a for a, b in zip(points, points[1:])) * 1000) if len(points) > 1 else 0


# ---------------------------------------------------------------- event timeline

class EventCollector:
    """Polls every broker's own ``events`` and keeps the union (a killed broker's
    events are gone with its process, so they are gathered while it lives)."""

    def __init__(self, brokers: dict[int, tuple[str, int]], since: float, skip: Callable[[int], bool]) -> None:
        self.brokers = brokers
        self.since = since
        self.skip = skip
        self.seen: dict[tuple, dict] = {}
        self.last_ts: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="chaos-events", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def poll_once(self) -> None:
        for b, (host, port) in self.brokers.items():
            if self.skip(b):
                continue
            since = self.last_ts.get(b, self.since)
            try:
                answer = post(host, port, "events", {"since": since, "cluster": False, "limit": 5000}, timeout_s=1.5)
            except Exception:
                continue
            for e in answer.get("events") or ():
                self.seen.setdefault((e["ts"], e["broker"], e["kind"], e["text"]), e)
                if e["broker"] == b:
                    self.last_ts[b] = max(self.last_ts.get(b, self.since), e["ts"] - 0.001)

    def _run(self) -> None:
        while not self.stop.is_set():
            self.poll_once()
            self.stop.wait(0.5)

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.poll_once()

    def count(self, kind: str) -> int:
        return sum(1 for e in self.seen.values() if e["kind"] == kind and "new partition" not in e["text"])

    def timeline(self) -> list[dict]:
        return sorted(self.seen.values(), key=lambda e: (e["ts"], e["broker"]))


# ---------------------------------------------------------------- nemesis

class Nemesis:
    """Injects faults on a seeded schedule and undoes them (restart, resume)."""

    def __init__(self, dir: str, zk: _Zk, topic: str, partitions: int, rng: random.Random, storage: str,
                 session_timeout_ms: int, log: Callable[[str], None], scenario: str = "random",
                 interval_s: tuple[float, float] = (2.0, 5.0), max_down: int = 2) -> None:
        self.dir = dir
        self.zk = zk
        self.topic = topic
        self.partitions = partitions
        self.rng = rng
        self.storage = storage
        self.session_s = session_timeout_ms / 1000.0
        self.log = log
        self.scenario = scenario
        self.interval_s = interval_s
        self.max_down = max_down
        self.brokers = sorted(load(dir).brokers)
        self.state: dict[int, str] = {b: UP for b in self.brokers}
        self.since: dict[int, float] = {b: 0.0 for b in self.brokers}
        self.old_owner: dict[int, int | None] = {}
        self.recover_at: dict[int, float] = {}
        self.faults = 0
        self.fault_log: list[str] = []
        self.problems: list[str] = []
        self.healing = False
        self.slot_allows_two: bool | None = None
        self.t0 = time.monotonic()

    # -- bookkeeping ------------------------------------------------------------------
    def _note(self, text: str) -> None:
        line = f"{time.monotonic() - self.t0:7.1f}s {text}"
        self.fault_log.append(line)
        self.log(line)

    def _set(self, b: int, st: str) -> None:
        self.state[b] = st
        self.since[b] = time.monotonic()

    def down_count(self) -> int:
        return sum(1 for st in self.state.values() if st != UP)

    def unreachable(self, b: int) -> bool:
        """True for brokers that should not be asked anything right now."""
        return self.state.get(b) in (PAUSED, DEAD, STARTING)

    def _pid(self, b: int) -> int | None:
        return load(self.dir).broker(b).pid

    # -- recovery ---------------------------------------------------------------------
    def _restart(self, b: int) -> None:
        try:
            self.old_owner[b] = self.zk.registration_owner(b)
        except Exception:
            self.old_owner[b] = None
        launcher.start(self.dir, b, wait=False)
        self._set(b, STARTING)
        self._note(f"restart broker {b}")

    def _registered(self, b: int) -> bool:
        try:
            owner = self.zk.registration_owner(b)
        except Exception:
            return False
        if owner is None or owner == self.old_owner.get(b):
            return False
        info = load(self.dir).broker(b)
        return launcher.api_versions(info.host, info.port, timeout_s=1.0) is not None

    def tick(self) -> None:
        """Advance recoveries: resume paused brokers, restart dead ones, notice exits and
        registrations (and brokers that died without being told to)."""
        for b in self.brokers:
            try:
                self._tick_one(b)
            except Exception as exc:  # a launcher error must not end the run
                self._note(f"broker {b}: recovery step failed: {type(exc).__name__}: {exc}")

    def _tick_one(self, b: int) -> None:
        now = time.monotonic()
        st = self.state[b]
        if st == UP:
            if launcher.proc_state(self._pid(b)) == "dead":
                self.problems.append(f"broker {b} died without being killed (see its log)")
                self._note(f"broker {b} DIED on its own; restarting it")
                self._set(b, DEAD)
                self.recover_at[b] = now + 1.0
        elif st == PAUSED and now >= self.recover_at.get(b, 0):
            launcher.resume(self.dir, b)
            self._note(f"SIGCONT broker {b} (paused {now - self.since[b]:.1f}s)")
            self._set(b, UP)
        elif st == TERMINATING:
            if launcher.proc_state(self._pid(b)) == "dead":
                self._note(f"broker {b} exited after SIGTERM ({now - self.since[b]:.1f}s)")
                self._set(b, DEAD)
                self.recover_at[b] = now + self.rng.uniform(1.0, 4.0) if not self.healing else now
            elif now - self.since[b] > 30:
                launcher.kill(self.dir, b, "KILL")
                self._note(f"broker {b} still running 30s after SIGTERM: SIGKILL")
                self._set(b, DEAD)
                self.recover_at[b] = now
        elif st == DEAD and now >= self.recover_at.get(b, 0):
            self._restart(b)
        elif st == STARTING:
            if launcher.proc_state(self._pid(b)) == "dead":
                self._note(f"broker {b} exited during start-up; starting it again")
                self._set(b, DEAD)
                self.recover_at[b] = now + 1.0
            elif self._registered(b):
                self._note(f"broker {b} registered again ({now - self.since[b]:.1f}s after restart)")
                self._set(b, UP)

    def heal(self, timeout_s: float = 90.0) -> bool:
        """Resume and restart everything; True once every broker is registered again."""
        self.healing = True
        for b in self.brokers:
            self.recover_at[b] = 0.0
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.tick()
            if all(st == UP for st in self.state.values()):
                return True
            time.sleep(0.1)
        return False

    # -- faults -------------------------------------------------------------------------
    def _up(self) -> list[int]:
        return [b for b in self.brokers if self.state[b] == UP]

    def _leader_of(self, partition: int) -> int | None:
        try:
            st = self.zk.partition_state(self.topic, partition)
        except Exception:
            return None
        return st.leader if st is not None and st.leader >= 0 else None

    def _safe_to_destroy(self, victim: int) -> bool:
        """Memory storage only: a killed broker comes back empty, so never kill the last
        live ISR member of a partition (that would be the loss of every copy, which no
        replication protocol survives).  Disk storage keeps the data: always safe."""
        if self.storage != "memory":
            return True
        for p in range(self.partitions):
            try:
                st = self.zk.partition_state(self.topic, p)
            except Exception:
                return False
            if st is None:
                continue
            holders = [b for b in st.isr if b != victim and self.state.get(b) in (UP, PAUSED)]
            if not holders:
                return False
        return True

    def _kill(self, b: int, why: str) -> None:
        launcher.kill(self.dir, b, "KILL")
        self._set(b, DEAD)
        self.recover_at[b] = time.monotonic() + self.rng.uniform(1.0, 6.0)
        self.faults += 1
        self._note(f"kill -9 broker {b} ({why})")

    def _pause(self, b: int, why: str) -> None:
        long = self.rng.random() < 0.5
        duration = self.rng.uniform(1.5, 2.5) * self.session_s if long else self.rng.uniform(0.5, 0.6 * self.session_s)
        launcher.kill(self.dir, b, "STOP")
        self._set(b, PAUSED)
        self.recover_at[b] = time.monotonic() + duration
        self.faults += 1
        self._note(f"SIGSTOP broker {b} for {duration:.1f}s ({why}{', past the session timeout' if long else ''})")

    def _term(self, b: int, why: str) -> None:
        launcher.kill(self.dir, b, "TERM")
        self._set(b, TERMINATING)
        self.faults += 1
        self._note(f"SIGTERM broker {b} ({why}): controlled shutdown")

    def inject(self) -> bool:
        """Try to inject one fault; False when none is allowed right now."""
        if self.scenario == "kip101":
            return self._kip101()
        up = self._up()
        if self.slot_allows_two is None:  # decided once per fault slot: usually one broker down at most
            self.slot_allows_two = self.rng.random() < 0.3
        allowed_down = min(2 if self.slot_allows_two else 1, self.max_down)
        if self.down_count() + 1 > allowed_down or len(up) < 2:
            return False
        self.slot_allows_two = None
        kind = self.rng.choices(["kill_leader", "kill_controller", "kill_random", "pause", "term", "term_pair"],
                                weights=[3, 2, 2, 3, 2, 1])[0]
        partition = self.rng.randrange(self.partitions)
        if kind == "term_pair":
            if self.down_count() != 0:
                kind = "term"
            else:
                return self._term_pair(partition)
        if kind == "kill_controller":
            try:
                victim, why = self.zk.controller(), "the controller"
            except Exception:
                victim, why = None, ""
        elif kind in ("kill_leader",) or (kind in ("pause", "term") and self.rng.random() < 0.6):
            victim, why = self._leader_of(partition), f"leader of {self.topic}-{partition}"
        else:
            victim, why = None, ""
        if victim not in up:
            victim, why = self.rng.choice(up), "a random broker"
        if kind in ("kill_leader", "kill_controller", "kill_random", "term") and not self._safe_to_destroy(victim):
            return False
        if kind.startswith("kill"):
            self._kill(victim, why)
        elif kind == "pause":
            self._pause(victim, why)
        else:
            self._term(victim, why)
        return True

    def _term_pair(self, partition: int) -> bool:
        """Controlled shutdown of a follower, then at once of the leader: the remaining
        replica becomes follower at a new epoch (it truncates to its HW under
        high_watermark truncation) and is elected leader a moment later."""
        leader = self._leader_of(partition)
        if leader is None or self.state.get(leader) != UP:
            return False
        followers = [b for b in self._up() if b != leader]
        if len(followers) < 2:
            return False
        follower = self.rng.choice(followers)
        if not (self._safe_to_destroy(follower) and self._safe_to_destroy(leader)):
            return False
        self._term(follower, f"a follower of {self.topic}-{partition}")
        time.sleep(self.rng.uniform(0.0, 0.03))
        self._term(leader, f"then the leader of {self.topic}-{partition}")
        return True

    def _kip101(self) -> bool:
        """The targeted scenario: only follower-then-leader controlled shutdowns, each from a
        fully healed cluster (all replicas in every ISR)."""
        if self.down_count() or not self._all_isr_full():
            return False
        return self._term_pair(self.rng.randrange(self.partitions))

    def _all_isr_full(self) -> bool:
        try:
            for p in range(self.partitions):
                st = self.zk.partition_state(self.topic, p)
                if st is None or st.leader < 0 or sorted(st.isr) != self.brokers:
                    return False
        except Exception:
            return False
        return True


# ---------------------------------------------------------------- checks

def _replica_states(brokers: dict[int, tuple[str, int]], topic: str, partition: int,
                    checksum_upto: int | None = None) -> dict[int, dict]:
    out = {}
    for b, (host, port) in brokers.items():
        try:
            r = post(host, port, "replica_state", {"partitions": [{"topic": topic, "partition": partition}],
                                                   "checksum_upto": checksum_upto}, timeout_s=3.0)
        except Exception:
            continue
        for rep in r.get("replicas") or ():
            out[b] = rep
    return out


def _compare_replicas(brokers: dict[int, tuple[str, int]], topic: str, partition: int,
                      replicas: list[int]) -> tuple[bool, str]:
    """(identical, description): every replica answers, has LEO >= the leader's HW, the same
    HW, and the same checksum of its log up to that HW."""
    states = _replica_states(brokers, topic, partition)
    leaders = [st for st in states.values() if st["role"] == "leader"]
    if len(leaders) != 1:
        return False, f"{topic}-{partition}: {len(leaders)} replicas claim leadership"
    hw = leaders[0]["high_watermark"]
    sums = _replica_states(brokers, topic, partition, checksum_upto=hw)
    if sorted(sums) != sorted(replicas):
        return False, f"{topic}-{partition}: replicas {sorted(sums)} answered, expected {sorted(replicas)}"
    desc = ", ".join(f"broker {b}: LEO {s['log_end_offset']} HW {s['high_watermark']} sum {s['checksum']}"
                     for b, s in sorted(sums.items()))
    same = (len({s["checksum"] for s in sums.values()}) == 1
            and all(s["log_end_offset"] >= hw and s["high_watermark"] == hw for s in sums.values()))
    return same, f"{topic}-{partition} up to HW {hw}: {desc}"


def read_final_log(bootstrap: str, topic: str, partitions: int, timeout_s: float = 120.0) -> dict[int, dict[int, str]]:
    """Every committed record of every partition: partition -> offset -> value."""
    from .client.sync import Consumer
    from .client.types import TopicPartition

    out: dict[int, dict[int, str]] = {p: {} for p in range(partitions)}
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    with Consumer(bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=100) as c:
        c.assign(tps)
        deadline = time.monotonic() + timeout_s
        while True:  # the broker asked for metadata may not know the latest leaders yet
            try:
                ends = c.end_offsets(tps)
                break
            except KafkaError as exc:
                if not exc.retriable or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        c.seek_to_beginning(*tps)
        while any(c.position(tp) < ends[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} to its high watermarks {ends} took over {timeout_s:g}s")
            for r in c.poll(timeout_ms=500):
                out[r.partition][r.offset] = r.value.decode() if r.value is not None else ""
    return out


# ---------------------------------------------------------------- run

def _start_cluster(dir: str, storage: str, configs: dict[str, str]) -> None:
    last: Exception | None = None
    for _ in range(3):
        zk_port = _free_port()
        base = _free_block(3, avoid=zk_port)
        try:
            launcher.up(dir, brokers=3, zookeeper_port=zk_port, base_port=base, storage=storage,
                        broker_configs=configs, timeout_s=90)
            return
        except Exception as exc:
            last = exc
            try:
                launcher.down(dir)
            except Exception:
                pass
            if "in use" not in str(exc):
                raise
    raise RuntimeError(f"could not start a cluster: {last}")


def _cluster_running(dir: str) -> bool:
    if not exists(dir):
        return False
    state = load(dir)
    return all(launcher.proc_state(b.pid) == "running" for b in state.brokers.values())


def run(*, dir: str | None = None, storage: str = "disk", truncation: str = "leader_epoch", seed: int = 0,
        faults: int | None = None, duration: float | None = None, partitions: int = 3, producers: int = 2,
        consumers: int = 1, rate: float = 150.0, scenario: str = "random", interval_s: tuple[float, float] = (2.0, 5.0),
        heal_timeout_s: float = 120.0, topic: str | None = None, keep: bool = False,
        broker_configs: dict[str, str] | None = None, log: Callable[[str], None] | None = None,
        idempotence: bool = True) -> Summary:
    """Run the fault-injection suite and return its :class:`Summary`.

    ``dir``: use the cluster recorded there (started there if none runs); default a new
    cluster in a temporary folder, stopped afterwards and removed unless the run failed
    or ``keep``.  ``faults`` and/or ``duration`` bound the fault phase (default 10
    faults).  ``rate`` is records per second per producer.
    """
    if truncation not in TRUNCATIONS:
        raise ValueError(f"truncation must be one of {TRUNCATIONS}")
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario must be one of {SCENARIOS}")
    if storage not in ("memory", "disk"):
        raise ValueError("storage must be memory or disk")
    if faults is None and duration is None:
        faults = 10
    log = log or (lambda line: None)
    rng = random.Random(seed)
    summary = Summary(seed=seed, truncation=truncation, storage=storage)
    started_here = False
    tmp = None
    if dir is None:
        tmp = tempfile.mkdtemp(prefix="minikafka-chaos-")
        dir = f"{tmp}/cluster"
    summary.dir = dir
    configs = dict(FAST_SETTINGS)
    configs["replication.truncation"] = truncation
    configs.update(broker_configs or {})
    t_start = time.monotonic()
    zk = None
    workload = None
    events = None
    nemesis = None
    try:
        if _cluster_running(dir):
            log(f"using the running cluster in {dir} (its broker settings are kept)")
            summary.storage = load(dir).storage
        else:
            log(f"starting a 3-broker cluster in {dir} (storage {storage}, truncation {truncation})")
            _start_cluster(dir, storage, configs)
            started_here = True
        state = load(dir)
        brokers = {b: (s.host, s.port) for b, s in state.brokers.items()}
        bootstrap = ",".join(f"{h}:{p}" for h, p in brokers.values())
        storage = summary.storage = state.storage
        zk = _Zk(state.zookeeper.connect)
        topic = topic or f"chaos-{seed}-{rng.randrange(1 << 30):08x}"
        session_ms = int(_broker_setting(state, "zookeeper.session.timeout.ms", 6000))

        from .client.sync import Admin
        with Admin(bootstrap) as admin:
            admin.create_topic(topic, partitions, 3, config={"min.insync.replicas": "2",
                                                             "unclean.leader.election.enable": "false"})
        initial_epochs = {p: zk.partition_state(topic, p).leader_epoch for p in range(partitions)}
        log(f"topic {topic}: {partitions} partitions, RF 3, min.insync.replicas 2; seed {seed}")

        nemesis = Nemesis(dir, zk, topic, partitions, rng, storage, session_ms, log, scenario, interval_s)
        events = EventCollector(brokers, since=time.time(), skip=nemesis.unreachable)
        events.start()
        workload = Workload(bootstrap, topic, partitions, producers, consumers, rate, log, idempotence)
        workload.start()

        # -- fault phase
        stalled = False
        fault_deadline = time.monotonic() + duration if duration is not None else None
        next_fault = time.monotonic() + rng.uniform(*interval_s)
        last_injected = time.monotonic()
        while True:
            now = time.monotonic()
            if fault_deadline is not None and now >= fault_deadline:
                break
            if now - last_injected > STALL_S:
                states = {p: zk.partition_state(topic, p) for p in range(partitions)}
                summary.problems.append(f"no fault could be injected for {STALL_S:g}s: the cluster did not recover "
                                        f"(brokers {nemesis.state}, partitions {states})")
                summary.healed = False
                stalled = True
                break
            if faults is not None and nemesis.faults >= faults and now >= next_fault:
                break
            nemesis.tick()
            if now >= next_fault and (faults is None or nemesis.faults < faults):
                try:
                    injected = nemesis.inject()
                except Exception as exc:  # e.g. the victim died on its own meanwhile
                    log(f"fault injection failed: {type(exc).__name__}: {exc}")
                    injected = False
                if injected:
                    last_injected = time.monotonic()
                    next_fault = time.monotonic() + rng.uniform(*interval_s)
                else:
                    next_fault = time.monotonic() + 0.5
            time.sleep(0.1)

        # -- heal
        log("healing: resuming and restarting every broker")
        back = nemesis.heal(timeout_s=heal_timeout_s)
        summary.healed = back and not stalled
        if not back:
            summary.problems.append(f"brokers not all back within {heal_timeout_s:g}s: {nemesis.state}")
        full = _wait(lambda: nemesis._all_isr_full(), heal_timeout_s)
        if not full:
            summary.healed = False
            states = {p: zk.partition_state(topic, p) for p in range(partitions)}
            summary.problems.append(f"not every partition has all 3 replicas in its ISR: {states}")
        log("stopping producers")
        workload.stop_producers()
        summary.longest_unavailable_ms = workload.longest_gap_ms()

        # -- replicas identical up to the HW (they converge once producing stops)
        for p in range(partitions):
            result: list[str] = [""]

            def identical(p: int = p) -> bool:
                same, desc = _compare_replicas(brokers, topic, p, nemesis.brokers)
                result[0] = desc
                return same
            if not _wait(identical, 30.0):
                summary.divergent.append(result[0])
                summary.problems.append(f"replicas differ: {result[0]}")

        # -- final log and the checks
        final = read_final_log(bootstrap, topic, partitions)
        workload.stop_consumers()
        events.finish()
        summary.final_offsets = {p: len(final[p]) for p in range(partitions)}
        acked = list(workload.acked)
        summary.acked = len(acked)
        summary.failed = workload.failed
        summary.unresolved = workload.sent - len(acked) - workload.failed
        for p, off, value, _ in acked:
            if final[p].get(off) != value:
                summary.lost += 1
                summary.lost_records.append((p, off, value))
        counts: dict[str, int] = {}
        for recs in final.values():
            for v in recs.values():
                counts[v] = counts.get(v, 0) + 1
        summary.duplicated = sum(1 for n in counts.values() if n > 1)
        with workload.lock:
            reads = {k: set(v) for k, v in workload.reads.items()}
        summary.consumed = len(reads)
        for (p, off), values in sorted(reads.items()):
            for value in sorted(values):
                if final[p].get(off) != value:
                    summary.vanished.append((p, off, value, final[p].get(off)))
        summary.vanished_reads = len(summary.vanished)
        summary.leader_elections = events.count("leader_elected")
        summary.unclean = events.count("unclean_election")
        final_epochs = {p: zk.partition_state(topic, p).leader_epoch for p in range(partitions)}
        summary.epoch_bumps = sum(final_epochs[p] - initial_epochs[p] for p in range(partitions))
        summary.problems += workload.problems + nemesis.problems
        if summary.lost:
            summary.problems.append(f"{summary.lost} acknowledged records are not at their acknowledged offset")
        if summary.vanished_reads:
            summary.problems.append(f"{summary.vanished_reads} records read by consumers are not in the final log")
        if not summary.acked:
            summary.problems.append("no record was acknowledged")
        if idempotence and summary.duplicated:
            summary.problems.append(f"{summary.duplicated} values are in the log more than once although "
                                    f"the producers are idempotent")
        summary.ok = (summary.lost == 0 and not summary.divergent and summary.vanished_reads == 0
                      and (summary.duplicated == 0 or not idempotence)
                      and summary.healed and summary.acked > 0 and not workload.problems and not nemesis.problems)
    except Exception as exc:
        summary.ok = False
        summary.problems.append(f"the run failed: {type(exc).__name__}: {exc}")
    finally:
        if nemesis is not None:
            summary.faults = nemesis.faults
            summary.fault_log = nemesis.fault_log
        if events is not None:
            _dump_timeline(dir, events, summary)
        if workload is not None:
            workload.stop_producing.set()
            workload.stop_consuming.set()
        if events is not None:
            events.stop.set()
        if zk is not None:
            zk.close()
        if started_here:
            try:
                launcher.down(dir)
            except Exception as exc:
                summary.problems.append(f"stopping the cluster: {exc}")
        summary.elapsed_s = time.monotonic() - t_start
        if tmp is not None and summary.ok and not keep:
            shutil.rmtree(tmp, ignore_errors=True)
            summary.dir = ""
    return summary


def _broker_setting(state: Any, name: str, default: Any) -> Any:
    """A broker setting from the first broker's recorded command line."""
    for b in state.brokers.values():
        argv = b.argv or []
        for i, arg in enumerate(argv):
            if arg == "--config" and i + 1 < len(argv) and argv[i + 1].startswith(name + "="):
                return argv[i + 1].split("=", 1)[1]
    return default


def _wait(cond: Callable[[], bool], timeout_s: float, interval_s: float = 0.25) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if cond():
                return True
        except Exception:
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)


def _dump_timeline(dir: str, events: EventCollector, summary: Summary) -> None:
    """Write the gathered event timeline and the details next to the cluster (for post-mortems)."""
    try:
        with open(f"{dir}/chaos-events.jsonl", "w") as f:
            for e in events.timeline():
                f.write(json.dumps(e) + "\n")
        with open(f"{dir}/chaos-summary.txt", "w") as f:
            f.write(summary.line() + "\n" + summary.details() + "\n")
    except OSError:
        pass
