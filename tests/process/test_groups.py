"""Consumer groups on real processes: members share partitions, a SIGKILLed member's
partitions move, the group leader changes, committed offsets survive the coordinator's
broker, stale generations are fenced, and the CLI shows and changes groups."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition, errors
from minikafka.groups.records import OFFSETS_TOPIC
from process_helpers import keeps_running, run_cli, wait_for
from replica_checks import post

pytestmark = pytest.mark.process

HERE = Path(__file__).resolve().parents[1]  # tests/, beside the helpers


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _topic(cluster, partitions: int, rf: int = 3) -> str:
    name = _name("gt")
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(name, partitions, rf)
    return name


def _produce(cluster, topic: str, values: list[str]) -> None:
    with Producer(cluster.bootstrap, acks="all", linger_ms=5) as p:
        futs = [p.send(topic, v) for v in values]
        p.flush()
        for f in futs:
            f.result(timeout=60)


class Member:
    """tests/group_member_proc.py in its own process; its JSON lines collected by a thread."""

    def __init__(self, cluster, group: str, topic: str, name: str) -> None:
        self.name = name
        self.proc = subprocess.Popen([sys.executable, str(HERE / "group_member_proc.py"), cluster.bootstrap, group, topic,
                                      name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.events: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                pass

    def assignment(self) -> set[tuple[str, int]] | None:
        got = [e["assigned"] for e in list(self.events) if "assigned" in e]
        return {(t, p) for t, p in got[-1]} if got else None

    def values(self) -> set[str]:
        return {v for e in list(self.events) if "read" in e for _, _, v in e["read"]}

    def stop(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture
def members():
    started: list[Member] = []

    def start(cluster, group: str, topic: str, name: str) -> Member:
        m = Member(cluster, group, topic, name)
        started.append(m)
        return m

    yield start
    for m in started:
        m.stop()


def _split(ms: list[Member], partitions: int, topic: str) -> bool:
    """Every member has an assignment; together they cover every partition once."""
    got = [m.assignment() for m in ms]
    if any(a is None for a in got):
        return False
    flat = [tp for a in got for tp in a]
    return sorted(flat) == [(topic, p) for p in range(partitions)]


def test_three_members_split_six_partitions_and_take_over_a_killed_ones(cluster, members):
    topic, group = _topic(cluster, 6), _name("g")
    ms = [members(cluster, group, topic, f"member-{i}") for i in range(3)]
    wait_for(lambda: _split(ms, 6, topic) and all(len(m.assignment()) == 2 for m in ms), timeout_s=60,
             message="three members sharing six partitions, two each")
    with Admin(cluster.bootstrap) as admin:
        d = wait_for(lambda: (x := admin.describe_group(group)).state == "Stable" and len(x.members) == 3 and x,
                     timeout_s=30, message="a stable group of three")
    assert d.protocol == "range" and d.leader in {m.member_id for m in d.members}
    assert sorted(m.client_id for m in d.members) == ["member-0", "member-1", "member-2"]
    first = [f"a{i}" for i in range(60)]
    _produce(cluster, topic, first)
    wait_for(lambda: set().union(*(m.values() for m in ms)) >= set(first), timeout_s=60,
             message="the group reading every record")
    victim, rest = ms[0], ms[1:]
    before = victim.assignment()
    victim.stop(signal.SIGKILL)
    t0 = time.monotonic()
    wait_for(lambda: _split(rest, 6, topic) and all(len(m.assignment()) == 3 for m in rest), timeout_s=60,
             interval_s=0.05, message="the two survivors owning all six partitions, three each")
    took = time.monotonic() - t0
    assert len(before) == 2 and before <= set().union(*(m.assignment() for m in rest)), \
        "the killed member's partitions moved to the survivors"
    print(f"rebalance after SIGKILL of a member: {took:.1f} s (session.timeout.ms 6000)")
    assert took < 40
    second = [f"b{i}" for i in range(60)]
    _produce(cluster, topic, second)
    wait_for(lambda: set().union(*(m.values() for m in rest)) >= set(second), timeout_s=60,
             message="the survivors reading the killed member's partitions too")


def test_the_group_leader_leaves_and_another_member_leads(cluster, members):
    topic, group = _topic(cluster, 2), _name("g")
    ms = [members(cluster, group, topic, f"leader-test-{i}") for i in range(2)]
    wait_for(lambda: _split(ms, 2, topic), timeout_s=60, message="two members sharing two partitions")
    with Admin(cluster.bootstrap) as admin:
        d = wait_for(lambda: (x := admin.describe_group(group)).state == "Stable" and len(x.members) == 2 and x,
                     timeout_s=30, message="a stable group of two")
        leader = next(m for m in d.members if m.member_id == d.leader)
        leaving = next(m for m in ms if m.name == leader.client_id)
        staying = next(m for m in ms if m is not leaving)
        leaving.stop(signal.SIGTERM)  # closes the consumer: LeaveGroup, no session timeout to wait for
        d2 = wait_for(lambda: (x := admin.describe_group(group)).state == "Stable" and len(x.members) == 1 and x,
                      timeout_s=30, message="the group stable again with one member")
    new_leader = d2.members[0]
    assert d2.leader == new_leader.member_id and new_leader.client_id == staying.name
    assert d2.generation > d.generation
    out = run_cli("groups", "describe", group, "--bootstrap-server", cluster.bootstrap)
    assert out.returncode == 0, out.stderr
    assert f"group leader {new_leader.member_id}" in out.stdout
    events = post(cluster.brokers[d2.coordinator], "events", {"since": 0, "cluster": False, "limit": 5000})["events"]
    texts = [e["text"] for e in events if e["text"].startswith(f"group {group}:")]
    assert any("was the group leader" in t for t in texts), texts
    assert any(f"member {new_leader.member_id} is the group leader" in t for t in texts), texts


def test_a_member_that_commits_after_processing_resumes_where_it_left_off(cluster):
    topic, group = _topic(cluster, 3), _name("g")
    values = [f"v{i}" for i in range(30)]
    _produce(cluster, topic, values)
    seen: list[str] = []
    with Consumer(cluster.bootstrap, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False) as c:
        c.subscribe([topic])
        wait_for(lambda: seen.extend(r.value.decode() for r in c.poll(timeout_ms=200, max_records=5)) or len(seen) >= 10,
                 timeout_s=60, message="ten records read")
        c.commit()
        committed = {p: c.committed(TopicPartition(topic, p)) for p in range(3)}
        assert sum(v or 0 for v in committed.values()) == len(seen)
    rest: list[str] = []
    with Consumer(cluster.bootstrap, group_id=group, auto_offset_reset="earliest") as c2:
        c2.subscribe([topic])
        wait_for(lambda: rest.extend(r.value.decode() for r in c2.poll(timeout_ms=200)) or len(seen) + len(rest) >= 30,
                 timeout_s=60, message="the rest read by the next member")
    assert sorted(seen + rest) == sorted(values)  # nothing twice, nothing missing


def test_commits_from_a_stale_generation_or_an_unknown_member_are_refused(cluster):
    topic, group = _topic(cluster, 1), _name("g")
    with Consumer(cluster.bootstrap, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False) as c:
        c.subscribe([topic])
        wait_for(lambda: c.poll(timeout_ms=100) is not None and c.assignment(), timeout_s=60, message="an assignment")
        member = c._core._group
        node = member._coordinator
        base = {"group_id": group, "offsets": [{"topic": topic, "partition": 0, "offset": 1}]}
        stale = post(node[2], "offset_commit", {**base, "member_id": member.member_id,
                                                 "generation_id": member.generation - 1})
        assert stale["error"] == "ILLEGAL_GENERATION", stale
        unknown = post(node[2], "offset_commit", {**base, "member_id": "nobody", "generation_id": member.generation})
        assert unknown["error"] == "UNKNOWN_MEMBER_ID", unknown
        outsider = post(node[2], "offset_commit", {**base, "generation_id": -1})
        assert outsider["error"] == "UNKNOWN_MEMBER_ID", outsider  # the group has a member
        assert c.committed(TopicPartition(topic, 0)) is None  # nothing was stored
        c.commit({TopicPartition(topic, 0): 0})
        assert c.committed(TopicPartition(topic, 0)) == 0


def test_committed_offsets_survive_killing_the_coordinators_broker(make_cluster):
    handle = make_cluster()
    topic, group = _topic(handle, 4), _name("g")
    _produce(handle, topic, [f"x{i}" for i in range(40)])
    want = {TopicPartition(topic, p): 3 + p for p in range(4)}
    with Consumer(handle.bootstrap, group_id=group) as c:
        c.commit(want)
    with Admin(handle.bootstrap) as admin:
        coordinator = admin.describe_group(group).coordinator
        offsets_topic = admin.describe_topics([OFFSETS_TOPIC])[0]
    assert offsets_topic.replication_factor == 3
    handle.kill(coordinator)

    def moved() -> dict | None:
        try:
            with Admin(handle.bootstrap, request_timeout_ms=5000) as admin:
                d = admin.describe_group(group)
                return d.coordinator != coordinator and admin.list_group_offsets(group)
        except errors.KafkaError:
            return None
    got = wait_for(moved, timeout_s=60, message="a new coordinator answering with the committed offsets")
    assert got == want


def test_groups_commands_show_lag_reset_and_delete(cluster):
    topic, group = _topic(cluster, 1), _name("g")
    _produce(cluster, topic, [f"c{i}" for i in range(10)])
    boot = ("--bootstrap-server", cluster.bootstrap)
    out = run_cli("consume", topic, "--group", group, "--from-beginning", "--max-messages", "4", *boot)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["c0", "c1", "c2", "c3"]
    assert group in run_cli("groups", "list", *boot).stdout.split()
    d = json.loads(run_cli("groups", "describe", group, "--json", *boot).stdout)
    assert d["state"] == "Empty" and d["members"] == []
    assert d["offsets"] == [{"topic": topic, "partition": 0, "current_offset": 4, "log_end_offset": 10, "lag": 6,
                             "member_id": None, "host": None, "client_id": None}]
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{cluster.brokers[d['coordinator']]}/metrics", timeout=5).read()
    lines = metrics.decode().splitlines()
    assert f'minikafka_group_members{{group="{group}"}} 0' in lines
    assert any(line.startswith("minikafka_offset_commits_total ") and float(line.split()[1]) >= 1 for line in lines)
    text = run_cli("groups", "describe", group, *boot).stdout
    assert "CURRENT-OFFSET" in text and "LOG-END-OFFSET" in text and "LAG" in text
    again = run_cli("consume", topic, "--group", group, "--max-messages", "2", *boot)
    assert again.stdout.split() == ["c4", "c5"]  # from the committed offset
    run_cli("groups", "reset-offsets", group, "--topic", topic, "--to-offset", "8", "--execute", *boot)
    assert json.loads(run_cli("groups", "describe", group, "--json", *boot).stdout)["offsets"][0]["current_offset"] == 8
    reset = run_cli("groups", "reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute", *boot)
    assert reset.returncode == 0 and [line.split() for line in reset.stdout.splitlines()] == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [group, topic, "0", "0"]]
    deleted = run_cli("groups", "delete", group, *boot)
    assert deleted.returncode == 0 and "was successful" in deleted.stdout
    gone = json.loads(run_cli("groups", "describe", group, "--json", *boot).stdout)
    assert gone["state"] == "Dead" and gone["offsets"] == []
    # in words, a group that does not exist is an error (kafka-consumer-groups' sentence), not a "Dead" line
    described = run_cli("groups", "describe", group, *boot)
    assert described.returncode == 2 and described.stdout == "", described.stdout
    assert described.stderr == f"minikafka: error: GROUP_ID_NOT_FOUND: Consumer group '{group}' does not exist.\n"
    missing = run_cli("groups", "delete", group, *boot)
    assert missing.returncode == 2 and missing.stderr == described.stderr, "one wording for an unknown group"
    both = run_cli("consume", topic, "--group", group, "--partition", "0", *boot)
    assert both.returncode == 2 and "Traceback" not in both.stderr


def test_internal_and_colliding_topic_names_are_refused(cluster):
    boot = ("--bootstrap-server", cluster.bootstrap)
    out = run_cli("topics", "create", "__mine", "--partitions", "1", "--replication-factor", "1", *boot)
    assert out.returncode == 2 and "INVALID_TOPIC_EXCEPTION" in out.stderr
    base = _name("col")
    assert run_cli("topics", "create", f"{base}_x", "--partitions", "1", "--replication-factor", "1", *boot).returncode == 0
    out = run_cli("topics", "create", f"{base}.x", "--partitions", "1", "--replication-factor", "1", *boot)
    assert out.returncode == 2 and "collides" in out.stderr
    with Consumer(cluster.bootstrap, group_id=_name("g")) as c:
        c.commit({TopicPartition(f"{base}_x", 0): 0})  # makes sure __consumer_offsets exists
    out = run_cli("topics", "delete", OFFSETS_TOPIC, *boot)
    assert out.returncode == 2 and "internal topic" in out.stderr
    with Producer(cluster.bootstrap, acks=1, retries=0, enable_idempotence=False) as p:
        fut = p.send(OFFSETS_TOPIC, b"x", partition=0)
        with pytest.raises(errors.KafkaError) as exc:
            fut.result(timeout=30)
    assert "INVALID_TOPIC_EXCEPTION" in str(exc.value) or "UNKNOWN_TOPIC" in str(exc.value)


def test_a_member_that_stops_polling_leaves_after_max_poll_interval(cluster):
    topic, group = _topic(cluster, 2), _name("g")
    kw = dict(group_id=group, auto_offset_reset="earliest", heartbeat_interval_ms=200)
    with Consumer(cluster.bootstrap, max_poll_interval_ms=2000, **kw) as idle, Consumer(cluster.bootstrap, **kw) as busy:
        idle.subscribe([topic])
        busy.subscribe([topic])

        def both_own_one() -> bool:
            idle.poll(timeout_ms=50)
            busy.poll(timeout_ms=50)
            return len(idle.assignment()) == 1 and len(busy.assignment()) == 1
        wait_for(both_own_one, timeout_s=60, message="two members with one partition each")
        # idle stops calling poll(); its heartbeat thread leaves the group after 2 s
        wait_for(lambda: busy.poll(timeout_ms=100) is not None and len(busy.assignment()) == 2, timeout_s=30,
                 message="the polling member taking over both partitions")
        with Admin(cluster.bootstrap) as admin:
            d = admin.describe_group(group)
        assert [m.member_id for m in d.members] == [d.leader]
        # the idle member comes back at its next poll
        wait_for(both_own_one, timeout_s=60, message="the idle member rejoining when it polls again")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_consume_with_a_group_follows_until_interrupted_then_commits_and_leaves(cluster, sig):
    topic, group = _topic(cluster, 2), _name("g")
    _produce(cluster, topic, [f"f{i}" for i in range(6)])
    proc = subprocess.Popen([sys.executable, "-m", "minikafka", "consume", topic, "--group", group, "--from-beginning",
                             "--bootstrap-server", cluster.bootstrap], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        lines: list[str] = []
        assert proc.stdout is not None
        while len(lines) < 6:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "consume ended early"
            lines.append(line.strip())
        keeps_running(proc, 0.5, "consume --group, which must keep following the topic,")
        _produce(cluster, topic, ["late"])
        assert proc.stdout.readline().strip() == "late"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Processed a total of 7 messages" in err and "Traceback" not in err
    with Admin(cluster.bootstrap) as admin:
        d = admin.describe_group(group)
        assert d.state == "Empty"  # it left at once, no session timeout to wait for
        assert sum(admin.list_group_offsets(group).values()) == 7


def test_consume_with_timeout_zero_follows_until_ctrl_c_and_prints_the_summary(cluster):
    topic = _topic(cluster, 1)
    _produce(cluster, topic, ["x1", "x2"])
    proc = subprocess.Popen([sys.executable, "-m", "minikafka", "consume", topic, "--from-beginning", "--timeout-ms", "0",
                             "--bootstrap-server", cluster.bootstrap], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        assert [proc.stdout.readline().strip() for _ in range(2)] == ["x1", "x2"]
        keeps_running(proc, 1.5, "consume --timeout-ms 0, which must keep following,")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and "Processed a total of 2 messages" in err and "Traceback" not in err


def test_a_live_group_carries_on_when_its_coordinators_broker_is_killed(make_cluster, members):
    handle = make_cluster()
    topic, group = _topic(handle, 4), _name("g")
    ms = [members(handle, group, topic, f"survivor-{i}") for i in range(2)]
    wait_for(lambda: _split(ms, 4, topic), timeout_s=60, message="two members sharing four partitions")
    with Admin(handle.bootstrap) as admin:
        before = admin.describe_group(group)
    handle.kill(before.coordinator)
    values = [f"c{i}" for i in range(40)]
    _produce(handle, topic, values)
    wait_for(lambda: set().union(*(m.values() for m in ms)) >= set(values), timeout_s=90,
             message="the members reading on through the coordinator failover")

    def moved_and_committed() -> bool:
        try:
            with Admin(handle.bootstrap, request_timeout_ms=5000) as admin:
                d = admin.describe_group(group)
                offsets = admin.list_group_offsets(group)
        except errors.KafkaError:
            return False
        return d.coordinator != before.coordinator and len(d.members) == 2 and sum(offsets.values()) == 40
    wait_for(moved_and_committed, timeout_s=90,
             message="a new coordinator with both members and every commit (replayed from __consumer_offsets)")
