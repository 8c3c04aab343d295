"""The nemesis of a fault-injection run: faults injected on a seeded schedule, and
their undoing (Jepsen's nemesis).

Process faults act on the recorded broker pids: ``kill -9`` of a random broker, of a
partition leader or of the controller (restarted a few seconds later), SIGSTOP then
SIGCONT (sometimes for longer than the ZooKeeper session timeout), SIGTERM
(controlled shutdown) then restart, and "follower then leader" controlled shutdowns
in quick succession (the KIP-101 window).  With a :class:`~minikafka.chaos.links.ClusterLinks` (root
only) there are link faults too: a broker cut off from another broker (one direction
or both), from ZooKeeper, or from the controller's requests (its LeaderAndIsr), for
a fraction to twice the ZooKeeper session timeout, then healed.  At most two brokers
are down (or cut off) at once, usually one.

On a cluster whose ZooKeeper is an ensemble (``cluster up --zookeeper-nodes 3``) there
are ZooKeeper faults too, each alone (no broker fault meanwhile): ``kill -9`` of one
ZooKeeper server (the ensemble's leader half the time), restarted 1 to 6 s later, and
the loss of the quorum (a majority of the servers killed, the leader among them),
restarted after 0.5 to 1.5 ZooKeeper session timeouts.  :attr:`Nemesis.zk_windows`
records each one from the kill until the restarted servers serve again.
"""
from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Callable

from ..cluster import launcher
from ..cluster.state import load
from ..zk.launcher import server_mode
from .cluster import ZkReader

if TYPE_CHECKING:
    from .links import ClusterLinks, Cut

# Broker process states as the nemesis tracks them.
UP, PAUSED, DEAD, TERMINATING, STARTING = "up", "paused", "dead", "terminating", "starting"


class Nemesis:
    """Injects faults on a seeded schedule and undoes them (restart, resume)."""

    def __init__(self, dir: str, zk: ZkReader, topic: str, partitions: int, rng: random.Random, storage: str,
                 session_timeout_ms: int, log: Callable[[str], None], scenario: str = "random",
                 interval_s: tuple[float, float] = (2.0, 5.0), max_down: int = 2,
                 links: "ClusterLinks | None" = None) -> None:
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
        self.links = links
        self.cuts: list[tuple["Cut", float]] = []  # link faults in force and when they heal
        zk_state = load(dir).zookeeper
        self.zk_servers = {s.id: s.client_port for s in zk_state.servers}  # empty: no ensemble
        # the ZooKeeper fault in force: (kind, server ids killed, restart time, kill time, restarted)
        self.zk_fault: tuple[str, list[int], float, float, bool] | None = None
        self.zk_windows: list[tuple[str, float, float]] = []  # (kind, killed at, serving again at)

    # -- bookkeeping ------------------------------------------------------------------
    def _note(self, text: str) -> None:
        line = f"{time.monotonic() - self.t0:7.1f}s {text}"
        self.fault_log.append(line)
        self.log(line)

    def _set(self, b: int, st: str) -> None:
        self.state[b] = st
        self.since[b] = time.monotonic()

    def down_count(self) -> int:
        """How many brokers are not up (paused, dead, stopping or starting)."""
        return sum(1 for st in self.state.values() if st != UP) + len(self.cuts) + (self.zk_fault is not None)

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
        registrations (and brokers that died without being told to); heal link faults
        whose time is up."""
        self._heal_links(only_due=True)
        try:
            self._tick_zookeeper()
        except Exception as exc:
            self._note(f"ZooKeeper recovery step failed: {type(exc).__name__}: {exc}")
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
        self._heal_links(only_due=False)
        if self.zk_fault is not None:
            kind, killed, _at, since, restarted = self.zk_fault
            self.zk_fault = (kind, killed, 0.0, since, restarted)
        for b in self.brokers:
            self.recover_at[b] = 0.0
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.tick()
            if all(st == UP for st in self.state.values()) and self.zk_fault is None:
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
        if self.scenario == "zookeeper":
            return self._kill_zookeeper(None)
        if self.zk_fault is not None:
            return False  # a ZooKeeper fault stays alone, so that its unavailability is its own
        up = self._up()
        if self.slot_allows_two is None:  # decided once per fault slot: usually one broker down at most
            self.slot_allows_two = self.rng.random() < 0.3
        allowed_down = min(2 if self.slot_allows_two else 1, self.max_down)
        if self.down_count() + 1 > allowed_down or len(up) < 2:
            return False
        self.slot_allows_two = None
        kinds = ["kill_leader", "kill_controller", "kill_random", "pause", "term", "term_pair"]
        weights = [3, 2, 2, 3, 2, 1]
        if self.links is not None:
            kinds.append("link")
            weights.append(3)
        if self.zk_servers:
            kinds += ["zk_server", "zk_quorum"]
            weights += [3, 1]
        kind = self.rng.choices(kinds, weights=weights)[0]
        partition = self.rng.randrange(self.partitions)
        if kind.startswith("zk_"):
            return self._kill_zookeeper(kind == "zk_quorum")
        if kind == "link":
            return self._cut_link(partition, up)
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

    # -- ZooKeeper faults (an ensemble only) ----------------------------------------------
    def zk_modes(self) -> dict[int, str]:
        """Each ZooKeeper server's mode, from its ``srvr`` answer."""
        return {sid: server_mode("127.0.0.1", port) for sid, port in self.zk_servers.items()}

    def _kill_zookeeper(self, quorum: bool | None) -> bool:
        """Kill one ZooKeeper server (the leader half the time), or a majority of them
        (the leader among them): alone, from a cluster with no other fault in force.
        ``quorum`` None (the zookeeper scenario): the quorum one time in three."""
        if self.down_count() != 0:
            return False
        modes = self.zk_modes()
        if any(m not in ("leader", "follower") for m in modes.values()):
            return False  # not every server serves yet
        if quorum is None:
            quorum = self.rng.random() < 1 / 3
        leader = next(sid for sid, m in modes.items() if m == "leader")
        others = [sid for sid in sorted(modes) if sid != leader]
        if quorum:
            victims = [leader] + self.rng.sample(others, len(modes) // 2)
            delay = self.rng.uniform(0.5, 1.5) * self.session_s
        else:
            victims = [leader] if self.rng.random() < 0.5 else [self.rng.choice(others)]
            delay = self.rng.uniform(1.0, 6.0)
        now = time.monotonic()
        for sid in victims:
            launcher.zookeeper_kill(self.dir, sid)
        self.zk_fault = ("quorum" if quorum else "server", victims, now + delay, now, False)
        self.faults += 1
        what = "the quorum: " if quorum else ""
        names = ", ".join(f"{sid}{' (leader)' if sid == leader else ''}" for sid in victims)
        self._note(f"kill -9 {what}ZooKeeper server{'s' if len(victims) > 1 else ''} {names} for {delay:.1f}s")
        return True

    def _tick_zookeeper(self) -> None:
        if self.zk_fault is None:
            return
        kind, killed, restart_at, since, restarted = self.zk_fault
        now = time.monotonic()
        if not restarted:
            if now < restart_at:
                return
            for sid in killed:
                launcher.zookeeper_start(self.dir, sid, wait=False)
            self.zk_fault = (kind, killed, restart_at, since, True)
            self._note(f"restart ZooKeeper server{'s' if len(killed) > 1 else ''} "
                       f"{', '.join(map(str, killed))} ({now - since:.1f}s after the kill)")
            return
        modes = self.zk_modes()
        if all(m in ("leader", "follower") for m in modes.values()):
            self.zk_windows.append((kind, since, now))
            self.zk_fault = None
            self._note(f"ZooKeeper serving again on every server ({now - since:.1f}s after the kill)")

    def _cut_link(self, partition: int, up: list[int]) -> bool:
        """A link fault on the leader of ``partition`` (or a random broker): cut off from
        another broker (one way or both), from ZooKeeper, or from the controller's requests."""
        assert self.links is not None
        victim = self._leader_of(partition) if self.rng.random() < 0.6 else None
        why = f"leader of {self.topic}-{partition}"
        if victim not in up:
            victim, why = self.rng.choice(up), "a random broker"
        kind = self.rng.choice(["broker", "zookeeper", "controller"])
        long = self.rng.random() < 0.3
        duration = self.rng.uniform(1.2, 2.0) * self.session_s if long else self.rng.uniform(0.3, 0.8) * self.session_s
        me = self.links.brokers[victim]
        if kind == "controller":
            try:
                controller = self.zk.controller()
            except Exception:
                controller = None
            if controller is None or controller == victim or controller not in self.links.brokers:
                kind = "broker"
            else:
                cut = self.links.links.cut(self.links.brokers[controller], me, only="requests")
        if kind == "broker":
            other = self.rng.choice([b for b in self.brokers if b != victim])
            both = self.rng.random() < 0.5
            cut = self.links.links.cut(me, self.links.brokers[other], both_ways=both)
        elif kind == "zookeeper":
            cut = self.links.links.cut(me, self.links.zookeeper, both_ways=True)
        self.cuts.append((cut, time.monotonic() + duration))
        self.faults += 1
        self._note(f"link fault for {duration:.1f}s: {cut.description} ({why}"
                   f"{', past the session timeout' if long else ''})")
        return True

    def _heal_links(self, only_due: bool) -> None:
        now = time.monotonic()
        for cut, at in list(self.cuts):
            if only_due and now < at:
                continue
            try:
                assert self.links is not None
                self.links.links.heal(cut)
                self._note(f"healed: {cut.description}")
            except Exception as exc:
                self._note(f"healing {cut.description} failed: {type(exc).__name__}: {exc}")
                self.problems.append(f"a link fault could not be healed: {cut.description}: {exc}")
            self.cuts.remove((cut, at))

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
        if self.down_count() or not self.all_isr_full():
            return False
        return self._term_pair(self.rng.randrange(self.partitions))

    def all_isr_full(self) -> bool:
        """True when every partition has a leader and all its replicas in the ISR."""
        try:
            for p in range(self.partitions):
                st = self.zk.partition_state(self.topic, p)
                if st is None or st.leader < 0 or sorted(st.isr) != self.brokers:
                    return False
        except Exception:
            return False
        return True
