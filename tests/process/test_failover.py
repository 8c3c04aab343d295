"""Failover on real processes: leader and controller failures, a paused controller being
fenced, controlled shutdown under load, unclean leader election, topic deletion and
partition reassignment.  Every test runs its own cluster and waits on conditions."""
from __future__ import annotations

import json
import os
import threading
import time
import urllib.request

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition, errors
from minikafka.cluster import launcher
from minikafka.cluster.state import load
from minikafka.zk import layout
from minikafka.zk.probe import probe_client
from process_helpers import run_cli, wait_for
from replica_checks import post, replica_states, wait_identical

FAST = {"zookeeper.session.timeout.ms": "4000", "replica.lag.time.max.ms": "3000"}
ALL = [1, 2, 3]


# ---------------------------------------------------------------- helpers

class Zk:
    """Reads the truth (partition states, controller) straight from ZooKeeper."""

    def __init__(self, handle) -> None:
        self.client = probe_client(handle.zk_connect, timeout_s=10.0)

    def state(self, topic: str, partition: int = 0) -> layout.LeaderIsr | None:
        got = self.client.exists(layout.partition_state_path(topic, partition))
        if got is None:
            return None
        return layout.LeaderIsr.decode(self.client.get(layout.partition_state_path(topic, partition))[0])

    def assignment(self, topic: str) -> dict[int, list[int]] | None:
        if self.client.exists(layout.topic_path(topic)) is None:
            return None
        return layout.decode_assignment(self.client.get(layout.topic_path(topic))[0])

    def close(self) -> None:
        self.client.stop()
        self.client.close()


@pytest.fixture
def zk_of():
    opened: list[Zk] = []

    def make(handle) -> Zk:
        z = Zk(handle)
        opened.append(z)
        return z

    yield make
    for z in opened:
        z.close()


def _create(handle, topic: str, partitions: int = 1, rf: int = 3, config: dict | None = None,
            assignment: dict[int, list[int]] | None = None) -> None:
    with Admin(handle.bootstrap) as admin:
        admin.create_topic(topic, partitions, rf, config=config, assignment=assignment)


def _produce(handle, topic: str, values: list[str], partition: int = 0, acks="all", **kw) -> list:
    with Producer(handle.bootstrap, acks=acks, linger_ms=1, request_timeout_ms=10000, **kw) as p:
        futs = [p.send(topic, v, partition=partition) for v in values]
        p.flush()
        return [f.result(timeout=60) for f in futs]


def _end_offset(c, tp) -> int:
    """The HW, asked again while the metadata the consumer got still names no leader (the
    broker it asked may not have had the controller's UpdateMetadata yet)."""
    got: list[int] = []

    def ask() -> bool:
        try:
            got.append(c.end_offsets([tp])[tp])
            return True
        except errors.KafkaError as exc:
            if not exc.retriable:
                raise
            return False
    wait_for(ask, timeout_s=30, interval_s=0.2, message=f"the end offset of {tp}")
    return got[0]


def _read_all(handle, topic: str, partition: int = 0) -> dict[int, str]:
    """offset -> value of every committed record of the partition."""
    out: dict[int, str] = {}
    with Consumer(handle.bootstrap, auto_offset_reset="earliest", request_timeout_ms=10000) as c:
        tp = TopicPartition(topic, partition)
        c.assign([tp])
        end = _end_offset(c, tp)

        def done() -> bool:
            out.update((r.offset, r.value.decode()) for r in c.poll(timeout_ms=300))
            return c.position(tp) >= end
        wait_for(done, timeout_s=60, message=f"reading {topic}-{partition} to its HW {end}")
    return out


def _assert_all_there(handle, topic: str, acked: list, values: list[str], partition: int = 0) -> dict[int, str]:
    log = _read_all(handle, topic, partition)
    missing = [(md.offset, v) for md, v in zip(acked, values) if log.get(md.offset) != v]
    assert not missing, f"acknowledged records lost: {missing[:10]}"
    return log


def _controller(handle) -> tuple[int | None, int | None]:
    st = handle.status()
    return st["controller"], st["controller_epoch"]


def _events(handle, broker_id: int) -> list[dict]:
    """The events a broker recorded itself (empty if it does not answer)."""
    try:
        return post(handle.brokers[broker_id], "events", {"since": 0, "cluster": False, "limit": 5000},
                    timeout_s=3.0)["events"]
    except Exception:
        return []


def _metric(handle, broker_id: int, name: str) -> float | None:
    """One unlabelled value of a broker's Prometheus /metrics (None if absent or unreachable)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{handle.brokers[broker_id]}/metrics", timeout=3) as r:
            text = r.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def _isr_full(zk: Zk, topic: str, partitions: int = 1, replicas: list[int] = ALL) -> bool:
    for p in range(partitions):
        st = zk.state(topic, p)
        if st is None or st.leader < 0 or sorted(st.isr) != sorted(replicas):
            return False
    return True


def _values(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


# ---------------------------------------------------------------- leader and controller failures

@pytest.mark.process
def test_killing_the_leader_elects_an_isr_replica_at_the_next_epoch(make_cluster, zk_of):
    handle = make_cluster(broker_configs=FAST)
    zk = zk_of(handle)
    _create(handle, "kl", config={"min.insync.replicas": "2"})
    first = _values("a", 200)
    acked = _produce(handle, "kl", first)
    wait_for(lambda: _isr_full(zk, "kl"), timeout_s=20, message="a full ISR")
    before = zk.state("kl")
    was_controller = _controller(handle)[0] == before.leader

    handle.kill(before.leader, "KILL")
    after = wait_for(lambda: (s := zk.state("kl")) is not None and s.leader not in (-1, before.leader) and s,
                     timeout_s=30, message="a new leader")
    assert after.leader in before.isr
    # + 2 where the leader was the controller too: the new controller takes it out of the
    # ISR first (leaderless), then elects, as Kafka's does
    assert after.leader_epoch == before.leader_epoch + (2 if was_controller else 1)
    assert before.leader not in after.isr
    second = _values("b", 100)
    acked += _produce(handle, "kl", second)
    _assert_all_there(handle, "kl", acked, first + second)

    handle.start(before.leader)
    wait_for(lambda: _isr_full(zk, "kl"), timeout_s=30, message="the old leader rejoining the ISR")
    wait_identical(handle, "kl", 1, lambda p: ALL)


@pytest.mark.process
def test_killing_the_controller_elects_another_with_the_next_controller_epoch(make_cluster, zk_of):
    handle = make_cluster(broker_configs=FAST)
    zk = zk_of(handle)
    _create(handle, "kc", partitions=3, config={"min.insync.replicas": "2"})
    old, epoch = _controller(handle)
    assert old is not None

    handle.kill(old, "KILL")
    new, new_epoch = wait_for(lambda: (c := _controller(handle))[0] not in (None, old) and c, timeout_s=30,
                              message="a new controller")
    assert new_epoch == epoch + 1
    # Every partition is served again (the dead controller's leaderships moved too).
    wait_for(lambda: all((s := zk.state("kc", p)) is not None and s.leader not in (-1, old) for p in range(3)),
             timeout_s=30, message="every partition led by a live broker")
    for p in range(3):
        values = _values(f"p{p}-", 50)
        _assert_all_there(handle, "kc", _produce(handle, "kc", values, partition=p), values, partition=p)

    handle.start(old)
    wait_for(lambda: _isr_full(zk, "kc", 3), timeout_s=30, message="the old controller rejoining every ISR")
    assert _controller(handle) == (new, new_epoch), "a restarted broker does not take the controller back"


@pytest.mark.process
def test_killing_a_broker_that_is_leader_and_controller(make_cluster, zk_of):
    handle = make_cluster(broker_configs=FAST)
    zk = zk_of(handle)
    old, epoch = _controller(handle)
    others = [b for b in ALL if b != old]
    _create(handle, "klc", assignment={0: [old] + others}, config={"min.insync.replicas": "2"})
    values = _values("v", 200)
    acked = _produce(handle, "klc", values)
    wait_for(lambda: _isr_full(zk, "klc"), timeout_s=20, message="a full ISR")
    before = zk.state("klc")
    assert before.leader == old

    handle.kill(old, "KILL")
    new, new_epoch = wait_for(lambda: (c := _controller(handle))[0] not in (None, old) and c, timeout_s=30,
                              message="a new controller")
    assert new_epoch == epoch + 1
    after = wait_for(lambda: (s := zk.state("klc")).leader not in (-1, old) and s, timeout_s=30, message="a new leader")
    # As Kafka's new controller: the dead broker leaves the ISR first (leaderless, + 1), then
    # the election (+ 1): two steps, in one write, so no broker sees the leaderless epoch
    assert after.leader in others and after.leader_epoch == before.leader_epoch + 2
    more = _values("w", 100)
    acked += _produce(handle, "klc", more)
    _assert_all_there(handle, "klc", acked, values + more)
    handle.start(old)
    wait_for(lambda: _isr_full(zk, "klc"), timeout_s=30, message="the old broker rejoining the ISR")
    wait_identical(handle, "klc", 1, lambda p: ALL)


@pytest.mark.process
def test_killing_the_leader_and_the_controller_on_two_brokers_at_once(make_cluster, zk_of):
    handle = make_cluster(broker_configs=FAST)
    zk = zk_of(handle)
    controller, epoch = _controller(handle)
    leader, survivor = [b for b in ALL if b != controller]
    _create(handle, "k2", assignment={0: [leader, controller, survivor]}, config={"min.insync.replicas": "2"})
    values = _values("v", 200)
    acked = _produce(handle, "k2", values)
    wait_for(lambda: _isr_full(zk, "k2"), timeout_s=20, message="a full ISR")
    before = zk.state("k2")
    assert before.leader == leader

    handle.kill(leader, "KILL")
    handle.kill(controller, "KILL")
    new, new_epoch = wait_for(lambda: (c := _controller(handle))[0] not in (None, controller) and c, timeout_s=30,
                              message="a new controller")
    assert (new, new_epoch) == (survivor, epoch + 1)
    after = wait_for(lambda: (s := zk.state("k2")).leader == survivor and s, timeout_s=30,
                     message="the survivor leading")
    assert list(after.isr) == [survivor]
    # As Kafka: when the new controller finds both gone, each dead broker leaves the ISR in
    # its own step (+ 2: the leader's step leaves the partition leaderless), then the
    # election (+ 1); when the leader's session expires later, the controller's leaves the
    # ISR at start-up (+ 1) and the leader's death is an election (+ 1).
    assert before.leader_epoch + 2 <= after.leader_epoch <= before.leader_epoch + 3
    # The lone ISR member serves every acknowledged record; acks=all is refused (min.insync.replicas=2).
    _assert_all_there(handle, "k2", acked, values)
    with pytest.raises(errors.NotEnoughReplicasError):
        _produce(handle, "k2", ["refused"], retries=0)

    handle.start(leader)
    handle.start(controller)
    wait_for(lambda: _isr_full(zk, "k2"), timeout_s=40, message="both brokers rejoining the ISR")
    more = _values("w", 50)
    acked += _produce(handle, "k2", more)
    _assert_all_there(handle, "k2", acked, values + more)
    wait_identical(handle, "k2", 1, lambda p: ALL)


@pytest.mark.process
def test_a_paused_controller_is_replaced_and_fenced_when_it_resumes(make_cluster, zk_of):
    handle = make_cluster(broker_configs=FAST)
    zk = zk_of(handle)
    _create(handle, "pc", partitions=3, config={"min.insync.replicas": "2"})
    old, epoch = _controller(handle)
    handle.kill(old, "STOP")
    try:
        # Far past the 4 s session timeout: the session expires and another broker wins /controller.
        new, new_epoch = wait_for(lambda: (c := _controller(handle))[0] not in (None, old) and c, timeout_s=30,
                                  message="a new controller while the old one is paused")
        assert new_epoch == epoch + 1
        wait_for(lambda: all(zk.state("pc", p).leader not in (-1, old) for p in range(3)), timeout_s=30,
                 message="leaderships moved off the paused broker")
        values = _values("v", 30)
        _assert_all_there(handle, "pc", _produce(handle, "pc", values, partition=0), values)
    finally:
        handle.resume(old)

    def fenced() -> list[dict]:
        return [e for e in _events(handle, old) if e["kind"] in ("controller_resigned", "controller_fenced")]
    said = wait_for(fenced, timeout_s=30, message=f"broker {old} noticing it is no longer controller")
    assert any("controller" in e["text"] for e in said)
    wait_for(lambda: _isr_full(zk, "pc", 3), timeout_s=40, message="the resumed broker rejoining every ISR")
    out = run_cli("cluster", "status", "--dir", handle.dir, "--json")
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)
    assert [b["id"] for b in status["brokers"] if b["controller"]] == [new]
    assert (status["controller"], status["controller_epoch"]) == (new, new_epoch)
    text = run_cli("cluster", "status", "--dir", handle.dir)
    assert f"controller: broker {new} (controller epoch {new_epoch})" in text.stdout


@pytest.mark.process
def test_a_paused_memory_follower_whose_session_expired_keeps_its_log_and_rejoins(make_cluster, zk_of):
    """A memory-storage follower frozen past its session while the partition takes a
    record: the leader drops it from the ISR first (no new leader epoch), then its
    registration vanishes (an idle partition would keep it in the ISR, as Kafka does, until
    the controller removed it with the registration).  On resume the same
    process fetches at once (its epoch is still current), rejoins the ISR, and
    re-registers with its log intact: the controller leaves the ISR alone (only a
    restarted memory broker comes back empty and is pushed out again)."""
    handle = make_cluster(broker_configs={"zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "2000"})
    zk = zk_of(handle)
    wait_for(lambda: _controller(handle)[0] is not None, timeout_s=30, message="a controller")
    _create(handle, "pf", rf=3, assignment={0: [1, 2, 3]})
    wait_for(lambda: _isr_full(zk, "pf"), timeout_s=30, message="a full ISR")
    values = _values("p", 20)
    _assert_all_there(handle, "pf", _produce(handle, "pf", values), values)
    follower = 3 if _controller(handle)[0] != 3 else 2
    paused_at = time.time()
    handle.kill(follower, "STOP")
    try:
        _produce(handle, "pf", ["late"], acks=1)  # the leader's log end moves past the paused follower's
        wait_for(lambda: follower not in zk.state("pf").isr, timeout_s=40,
                 message=f"the leader removing paused broker {follower} from the ISR")
        wait_for(lambda: zk.client.exists(layout.broker_path(follower)) is None, timeout_s=40,
                 message=f"paused broker {follower}'s registration expiring")
    finally:
        handle.resume(follower)
    wait_for(lambda: zk.client.exists(layout.broker_path(follower)) is not None, timeout_s=30,
             message=f"broker {follower} re-registering")
    wait_for(lambda: _isr_full(zk, "pf"), timeout_s=40, message=f"broker {follower} rejoining the ISR")
    controller = _controller(handle)[0]
    # The controller handled the re-registration: a registered restarted memory broker would
    # be pushed out of the ISR in the same plan, with an event recorded beside this one.
    wait_for(lambda: [e for e in _events(handle, controller) if e["kind"] in ("broker_registered", "broker_bounced")
                      and e["text"].startswith(f"controller: broker {follower} ") and e["ts"] >= paused_at],
             timeout_s=30,
             message=f"the controller handling broker {follower}'s re-registration")
    st = zk.state("pf")
    assert (st.leader, st.leader_epoch, sorted(st.isr)) == (1, 0, ALL)
    pushed_out = [e for e in _events(handle, controller) if "registered anew" in e["text"]]
    assert not pushed_out, pushed_out
    wait_for(lambda: replica_states(handle, "pf", 0)[follower]["log_end_offset"] == 21, 30,
             message=f"broker {follower} holding the 20 records and the late one")


# ---------------------------------------------------------------- controlled shutdown

@pytest.mark.process
def test_controlled_shutdown_moves_leaderships_before_exit_and_no_produce_fails(make_cluster, zk_of):
    handle = make_cluster(broker_configs=FAST)
    zk = zk_of(handle)
    _create(handle, "cs", partitions=3, config={"min.insync.replicas": "2"})
    wait_for(lambda: _isr_full(zk, "cs", 3), timeout_s=20, message="full ISRs")
    controller, _ = _controller(handle)
    leads = {b: [p for p in range(3) if zk.state("cs", p).leader == b] for b in ALL}
    victim = next(b for b in ALL if b != controller and leads[b])

    acked: list[tuple[int, int, str]] = []
    failed: list[BaseException] = []
    stop = threading.Event()

    def produce() -> None:
        with Producer(handle.bootstrap, acks="all", linger_ms=2, request_timeout_ms=10000) as p:
            i = 0
            while not stop.is_set():
                value, part = f"r{i}", i % 3
                fut = p.send("cs", value, partition=part)
                fut.add_done_callback(lambda f, v=value: failed.append(f.exception()) if f.exception()
                                      else acked.append((f.result().partition, f.result().offset, v)))
                i += 1
                time.sleep(0.003)
            p.flush()

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(acked) >= 100, timeout_s=30, message="records flowing")
        epochs_before = {p: zk.state("cs", p).leader_epoch for p in range(3)}
        pid = handle.pid(victim)
        handle.kill(victim, "TERM")
        moved_at = exited_at = None
        deadline = time.monotonic() + 30
        while exited_at is None and time.monotonic() < deadline:
            dead = launcher.proc_state(pid) == "dead"  # checked before the states: a move seen below
            if moved_at is None and all(zk.state("cs", p).leader != victim for p in leads[victim]):
                moved_at = time.monotonic()              # in the same round may be after the exit
            if dead:
                exited_at = time.monotonic()
            time.sleep(0.005)
        assert exited_at is not None, f"broker {victim} did not exit within 30 s of SIGTERM"
        assert moved_at is not None and moved_at < exited_at, "leaderships moved before the broker exited"
        count = len(acked)
        wait_for(lambda: len(acked) >= count + 200, timeout_s=30, message="producing on after the shutdown")
        # Out of every ISR before it exited, never added back, one leader epoch per partition
        # (the stopping broker got StopReplica, not LeaderAndIsr, so it stopped fetching).
        for p in range(3):
            st = zk.state("cs", p)
            assert victim not in st.isr, f"cs-{p}: stopped broker {victim} still in ISR {st.isr}"
            assert st.leader_epoch == epochs_before[p] + 1, (p, epochs_before[p], st.leader_epoch)
    finally:
        stop.set()
        thread.join(60)
    assert failed == [], f"{len(failed)} produces failed, first: {failed[:1]}"
    with open(load(handle.dir).broker(victim).log) as f:
        tail = f.read().rsplit("shutting down", 1)[-1]
    assert "0 partitions could not move" in tail
    texts = [e["text"] for e in _events(handle, controller) if e["kind"] == "leader_elected"]
    for p in leads[victim]:
        assert any(t.startswith(f"cs-{p}:") and f"controlled shutdown of broker {victim}" in t for t in texts)
    by_partition: dict[int, dict[int, str]] = {}
    for part, off, value in acked:
        by_partition.setdefault(part, {})[off] = value
    for part, expected in by_partition.items():
        log = _read_all(handle, "cs", part)
        assert all(log.get(off) == v for off, v in expected.items())


@pytest.mark.process
def test_controlled_shutdown_of_the_controller_and_another_broker_together(make_cluster, zk_of):
    handle = make_cluster(broker_configs=FAST)
    zk = zk_of(handle)
    _create(handle, "cs2", partitions=3, config={"min.insync.replicas": "2"})
    values = {p: _values(f"p{p}-", 50) for p in range(3)}
    acked = {p: _produce(handle, "cs2", values[p], partition=p) for p in range(3)}
    wait_for(lambda: _isr_full(zk, "cs2", 3), timeout_s=20, message="full ISRs")
    controller, _ = _controller(handle)
    other, survivor = [b for b in ALL if b != controller]
    pids = {b: handle.pid(b) for b in (controller, other)}
    handle.kill(controller, "TERM")
    handle.kill(other, "TERM")
    # A request queued at a controller that stops must be answered (NOT_CONTROLLER), or
    # both brokers hang in their shutdown.
    wait_for(lambda: all(launcher.proc_state(pid) == "dead" for pid in pids.values()), timeout_s=12,
             message="both brokers exiting promptly")
    wait_for(lambda: all(zk.state("cs2", p).leader == survivor for p in range(3)), timeout_s=30,
             message="the survivor leading every partition")
    for p in range(3):
        _assert_all_there(handle, "cs2", acked[p], values[p], partition=p)
    handle.start(controller)
    handle.start(other)
    wait_for(lambda: _isr_full(zk, "cs2", 3), timeout_s=40, message="both rejoining")


# ---------------------------------------------------------------- unclean leader election

@pytest.mark.process
@pytest.mark.parametrize("unclean", [False, True], ids=["unclean-off", "unclean-on"])
def test_unclean_leader_election(make_cluster, zk_of, unclean):
    handle = make_cluster(broker_configs=FAST, storage="disk")
    zk = zk_of(handle)
    controller, _ = _controller(handle)
    leader, follower = [b for b in ALL if b != controller]
    _create(handle, "u", rf=2, assignment={0: [leader, follower]},
            config={"unclean.leader.election.enable": "true" if unclean else "false"})
    before = _values("before", 10)
    acked = _produce(handle, "u", before)
    wait_identical(handle, "u", 1, lambda p: [leader, follower])

    handle.kill(follower, "KILL")
    wait_for(lambda: list(zk.state("u").isr) == [leader], timeout_s=30, message="the follower leaving the ISR")
    after = _values("after", 10)
    acked += _produce(handle, "u", after)  # committed by the leader alone (min.insync.replicas 1)
    handle.kill(leader, "KILL")
    offline = wait_for(lambda: (s := zk.state("u")).leader == -1 and s, timeout_s=30, message="the partition offline")
    assert list(offline.isr) == [leader], "the controller keeps the last ISR member"

    handle.start(follower)
    if not unclean:
        # Wait until the controller has handled the follower's return: its LeaderAndIsr has
        # reached the follower (still with no leader).
        wait_for(lambda: (r := replica_states(handle, "u", 0, brokers=[follower]).get(follower)) is not None
                 and r["leader_epoch"] == offline.leader_epoch, timeout_s=30, message="the follower hosting the replica")
        st = zk.state("u")
        assert (st.leader, list(st.isr), st.leader_epoch) == (-1, [leader], offline.leader_epoch)
        with Admin(handle.bootstrap) as admin:
            assert admin.describe_topics(["u"])[0].partitions[0].leader == -1
        assert not [e for e in _events(handle, controller) if e["kind"] == "unclean_election"]
        assert _metric(handle, controller, "minikafka_unclean_leader_elections_total") in (0.0, None)
        # The last ISR member's return brings everything back.
        handle.start(leader)
        wait_for(lambda: zk.state("u").leader == leader, timeout_s=30, message="the old leader leading again")
        _assert_all_there(handle, "u", acked, before + after)
        wait_for(lambda: sorted(zk.state("u").isr) == sorted([leader, follower]), timeout_s=30, message="full ISR")
        wait_identical(handle, "u", 1, lambda p: [leader, follower])
    else:
        st = wait_for(lambda: (s := zk.state("u")).leader == follower and s, timeout_s=30,
                      message="the out-of-sync follower elected")
        assert list(st.isr) == [follower] and st.leader_epoch == offline.leader_epoch + 1
        unclean_events = [e for e in _events(handle, controller) if e["kind"] == "unclean_election"]
        assert len(unclean_events) == 1 and f"election of broker {follower}" in unclean_events[0]["text"]
        assert _metric(handle, controller, "minikafka_unclean_leader_elections_total") == 1.0
        log = _read_all(handle, "u")
        assert [log[o] for o in sorted(log)] == before, "the records committed after the follower died are lost"
        # The old leader comes back and truncates to the new leader's log.
        handle.start(leader)
        wait_for(lambda: sorted(zk.state("u").isr) == sorted([leader, follower]), timeout_s=30, message="full ISR")
        wait_identical(handle, "u", 1, lambda p: [leader, follower])


# ---------------------------------------------------------------- deletion and reassignment

@pytest.mark.process
def test_delete_topic_removes_it_everywhere(make_cluster, zk_of):
    handle = make_cluster(storage="disk")
    zk = zk_of(handle)
    _create(handle, "gone", partitions=2)
    for p in range(2):
        _produce(handle, "gone", _values("v", 20), partition=p)
    wait_identical(handle, "gone", 2, lambda p: ALL)
    data_dirs = {b: load(handle.dir).broker(b).data_dir for b in ALL}
    assert all(os.path.isdir(os.path.join(data_dirs[b], f"gone-{p}")) for b in ALL for p in range(2))

    with Admin(handle.bootstrap) as admin:
        admin.delete_topic("gone")
        assert "gone" not in admin.list_topics()
    assert zk.assignment("gone") is None
    wait_for(lambda: not any(replica_states(handle, "gone", p) for p in range(2)), timeout_s=30,
             message="every replica stopped and deleted")
    wait_for(lambda: not any(os.path.exists(os.path.join(data_dirs[b], f"gone-{p}")) for b in ALL for p in range(2)),
             timeout_s=30, message="the replicas' log folders removed")
    # The name can be used again, from offset 0.
    _create(handle, "gone", partitions=1)
    assert [m.offset for m in _produce(handle, "gone", ["fresh"])] == [0]


@pytest.mark.process
def test_reassignment_moves_a_partition_and_its_replicas_end_identical(make_cluster, zk_of):
    handle = make_cluster()
    zk = zk_of(handle)
    _create(handle, "moving", rf=2, assignment={0: [1, 2]})
    first = _values("a", 300)
    acked = _produce(handle, "moving", first)

    with Admin(handle.bootstrap) as admin:
        results = admin.alter_partition_reassignments({TopicPartition("moving", 0): [3, 2]})
    assert results == {TopicPartition("moving", 0): None}
    wait_for(lambda: zk.assignment("moving") == {0: [3, 2]}, timeout_s=60, message="the new replica set recorded")
    st = wait_for(lambda: (s := zk.state("moving")).leader in (2, 3) and sorted(s.isr) == [2, 3] and s,
                  timeout_s=60, message="the new replicas in the ISR")
    assert 1 not in st.isr
    wait_for(lambda: not replica_states(handle, "moving", 0, brokers=[1]), timeout_s=30,
             message="broker 1 dropping its replica")
    with Admin(handle.bootstrap) as admin:
        desc = admin.describe_topics(["moving"])[0].partitions[0]
    assert desc.replicas == [3, 2]
    second = _values("b", 100)
    acked += _produce(handle, "moving", second)
    wait_identical(handle, "moving", 1, lambda p: [3, 2])
    log = _assert_all_there(handle, "moving", acked, first + second)
    assert [log[o] for o in sorted(log)] == first + second


@pytest.mark.process
def test_cli_elect_leaders_reassign_and_delete(make_cluster, zk_of):
    handle = make_cluster(broker_configs=FAST)
    zk = zk_of(handle)
    _create(handle, "pe", assignment={0: [1, 2, 3]})
    values = _values("v", 50)
    acked = _produce(handle, "pe", values)
    wait_for(lambda: _isr_full(zk, "pe"), timeout_s=20, message="a full ISR")
    handle.kill(1, "KILL")
    wait_for(lambda: zk.state("pe").leader in (2, 3), timeout_s=30, message="leadership leaving broker 1")
    handle.start(1)
    wait_for(lambda: _isr_full(zk, "pe"), timeout_s=30, message="broker 1 back in the ISR")
    assert zk.state("pe").leader != 1, "a returning broker does not take leadership back by itself"

    out = run_cli("topics", "elect-leaders", "--topic", "pe", "--dir", handle.dir)
    assert out.returncode == 0, out.stderr
    assert "pe-0: preferred leader elected" in out.stdout
    assert zk.state("pe").leader == 1
    again = run_cli("topics", "elect-leaders", "--topic", "pe", "--partition", "0", "--dir", handle.dir)
    assert again.returncode == 0 and "pe-0: already led by its preferred replica" in again.stdout
    none_needed = run_cli("topics", "elect-leaders", "--dir", handle.dir)
    assert none_needed.returncode == 0 and "already led by its preferred replica" in none_needed.stdout

    out = run_cli("topics", "reassign", "--topic", "pe", "--partition", "0", "--replicas", "3,2", "--dir", handle.dir)
    assert out.returncode == 0, out.stderr
    wait_for(lambda: zk.assignment("pe") == {0: [3, 2]} and sorted(zk.state("pe").isr) == [2, 3], timeout_s=60,
             message="the reassignment finishing")
    wait_identical(handle, "pe", 1, lambda p: [3, 2])
    _assert_all_there(handle, "pe", acked, values)
    bad = run_cli("topics", "reassign", "--topic", "pe", "--partition", "0", "--replicas", "3,9", "--dir", handle.dir)
    assert bad.returncode == 2 and "INVALID_REPLICA_ASSIGNMENT" in bad.stderr

    out = run_cli("topics", "delete", "pe", "--dir", handle.dir)
    assert out.returncode == 0 and "Deleted topic pe." in out.stdout, out.stderr
    assert "pe" not in run_cli("topics", "list", "--dir", handle.dir).stdout.split()
    missing = run_cli("topics", "delete", "pe", "--dir", handle.dir)
    assert missing.returncode == 2 and "UNKNOWN_TOPIC_OR_PARTITION" in missing.stderr


@pytest.mark.process
@pytest.mark.parametrize("reset", ["earliest", "none"])
def test_a_consumer_detects_a_log_truncated_by_an_unclean_election(make_cluster, zk_of, reset):
    """KIP-320, the client half: a consumer that read records an unclean election then
    removed validates its position with the new leader (OffsetsForLeaderEpoch) and moves
    back to where the logs diverge, or raises LogTruncationError with reset "none"."""
    handle = make_cluster(broker_configs=FAST, storage="disk")  # the follower keeps "a" over its restart
    zk = zk_of(handle)
    controller, _ = _controller(handle)
    leader, follower = [b for b in ALL if b != controller]
    _create(handle, "trunc", rf=2, assignment={0: [leader, follower]},
            config={"unclean.leader.election.enable": "true"})
    _produce(handle, "trunc", ["a"])
    wait_identical(handle, "trunc", 1, lambda p: [leader, follower])
    handle.kill(follower, "KILL")
    wait_for(lambda: list(zk.state("trunc").isr) == [leader], timeout_s=30, message="the follower out of the ISR")
    _produce(handle, "trunc", ["b"])  # offset 1, on the leader only
    consumer = Consumer(handle.bootstrap, auto_offset_reset=reset)
    try:
        consumer.assign([TopicPartition("trunc", 0)])
        consumer.seek(TopicPartition("trunc", 0), 0)
        seen = []
        wait_for(lambda: seen.extend(r.value for r in consumer.poll(timeout_ms=300)) or len(seen) >= 2, 30,
                 message="the consumer reading a and b")
        assert seen == [b"a", b"b"]
        handle.kill(leader, "KILL")
        handle.start(follower)
        wait_for(lambda: zk.state("trunc").leader == follower, timeout_s=60, message="the unclean election")
        _produce(handle, "trunc", ["c"])  # offset 1 again, in the new leader epoch
        if reset == "none":
            def raised() -> bool:
                try:
                    consumer.poll(timeout_ms=300)
                except errors.LogTruncationError as exc:
                    assert exc.divergent_offsets == {TopicPartition("trunc", 0): 1}
                    return True
                return False

            wait_for(raised, 30, message="LogTruncationError")
        else:
            more = []
            wait_for(lambda: more.extend(r for r in consumer.poll(timeout_ms=300)) or more, 30,
                     message="the consumer reading the new offset 1")
            assert [(r.offset, r.value) for r in more] == [(1, b"c")]
    finally:
        consumer.close()
