"""The failover scenario, run on Apache Kafka 3.9 and on minikafka alike.

One topic, :data:`TOPIC` (1 partition, RF 3, min.insync.replicas=2), goes through the
failovers an operator meets, in this order, on each cluster:

1. **ISR shrink**: a follower is paused (SIGSTOP) until the leader drops it from the ISR
   (both clusters run with a short ``replica.lag.time.max.ms``), then resumed;
2. **leader kill**: the leader is SIGKILLed while a producer (acks=all, idempotent) and a
   consumer group run through the failover (:func:`_clients`), then started again;
3. **preferred replica election** (ElectLeaders, PREFERRED, through the admin API);
4. **controlled shutdown**: the leader gets SIGTERM, then is started again;
5. **reassignment** (``kafka-reassign-partitions --execute``, Kafka's own tool, on both):
   the replica that was the leader leaves the assignment;

then an old controller's requests (:mod:`.controller_epoch`) are sent to a broker.

Broker ids are compared by **role**, the same on both clusters whatever their numbering:
the topic is created with the explicit assignment ``[A, B, C]`` where C is the broker
that is the controller at that moment and A, B the two others in id order, so the
controller is never the broker paused, killed or stopped.  After each step, in the state
reached (the follower still paused, the leader still down), this records per cluster:

* the partition's state znode as roles (leader, ISR, assignment, the leader epoch
  relative to the one at creation) and the brokers registered in /brokers/ids;
* the ISR of a second topic, :data:`IDLE_TOPIC`, with the same assignment, that nothing
  is written to while the follower is paused (a caught-up follower of an idle partition);
* the whole ZooKeeper tree, masked as :mod:`.znodes` does, with every partition's epochs
  and ISR masked as well (compared above, by role, for the scenario's partition);
* ``kafka-topics --describe`` (and, after the leader kill and at the end,
  ``kafka-consumer-groups --describe``), run with Kafka's own tools jar, normalized.
"""
from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..polling import poll
from . import controller_epoch, znodes

TOPIC = "failover"
IDLE_TOPIC = "failover-idle"  # same assignment, one record, nothing produced while the follower is paused
CREATED_RECORD = b"created"  # produced (acks=all) to both topics at creation: every follower has fetched
SHRINK_RECORD = b"isr-shrink"  # produced (acks=1) while the follower is paused: the leader's LEO moves on
GROUP = "failover-readers"
RECORDS = 200  # produced across the leader kill, 60 of them before it
BEFORE_KILL = 60
REPLICA_LAG_TIME_MAX_MS = "2000"  # both clusters: a paused follower leaves the ISR within seconds
# what both clusters run with: the short lag above, and ZooKeeper sessions that outlast the paused
# follower's pause (the ISR shrink, its observation and Kafka's describe tool take ~10 s)
BROKER_CONFIGS = {"replica.lag.time.max.ms": REPLICA_LAG_TIME_MAX_MS, "zookeeper.session.timeout.ms": "15000"}


@dataclass
class Control:
    """How the scenario reaches one cluster's processes and tools."""

    kind: str  # "kafka" (a `minikafka reference` cluster) or "minikafka" (a `minikafka cluster`)
    dir: str  # the cluster's folder (reference.json or cluster.json)
    kafka_ports: dict[int, int]  # broker id -> its Kafka listener
    jars: str  # Kafka's 3.9 jars, whose tools run against both clusters
    http_ports: dict[int, int] = field(default_factory=dict)  # minikafka: broker id -> msgpack/HTTP listener
    secret: str | None = None  # minikafka: the cluster credential its controller presents

    def bootstrap(self, without: int | None = None) -> str:
        return ",".join(f"127.0.0.1:{p}" for b, p in sorted(self.kafka_ports.items()) if b != without)

    def signal(self, broker_id: int, sig: str) -> None:
        """KILL (SIGKILL), TERM (controlled shutdown; returns once the process exited),
        STOP (pause) or CONT (resume) one broker."""
        from ..cluster import launcher
        from . import cluster as reference

        if self.kind == "minikafka":
            {"KILL": lambda: launcher.kill(self.dir, broker_id, "KILL"),
             "TERM": lambda: launcher.stop(self.dir, broker_id),
             "STOP": lambda: launcher.kill(self.dir, broker_id, "STOP"),
             "CONT": lambda: launcher.resume(self.dir, broker_id)}[sig]()
            return
        if reference.signal_broker(self.dir, broker_id, sig) == "not running" and sig != "KILL":
            raise RuntimeError(f"Kafka broker {broker_id} is not running")

    def start(self, broker_id: int) -> None:
        """Start a killed or stopped broker again (returns once it is spawned)."""
        from ..cluster import launcher
        from . import cluster as reference

        if self.kind == "minikafka":
            launcher.start(self.dir, broker_id, wait=False)
        else:
            reference.start(self.dir, broker_id)

    def tool(self, cls: str, *args: str) -> subprocess.Popen:
        """One of Kafka's tools (its main class), from Kafka's jars, against this cluster."""
        from ..zk.launcher import find_java

        env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_OPTS", "CLASSPATH")}
        return subprocess.Popen([find_java(), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                 "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dlog4j2.level=WARN",
                                 "-cp", os.path.join(self.jars, "*"), cls, *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                text=True, env=env)


TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
REASSIGN_COMMAND = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


# ----- reading a cluster --------------------------------------------------------------------------
def _wait(what: str, name: str, done: Callable[[], Any], timeout_s: float = 90) -> None:
    if not poll(done, timeout_s):
        raise TimeoutError(f"{name}: {what} within {timeout_s:.0f} s")


def _json(zk, path: str) -> Any:  # noqa: ANN001
    got = zk.exists(path) and zk.get(path)
    return json.loads(got[0]) if got and got[0] else None


def _state(zk, topic: str | None = None) -> dict:  # noqa: ANN001
    return _json(zk, f"/brokers/topics/{topic or TOPIC}/partitions/0/state") or {}


def _registered(zk) -> set[int]:  # noqa: ANN001
    return {int(b) for b in zk.get_children("/brokers/ids")}


def _settled(zk) -> bool:  # noqa: ANN001
    """No notification the controller has yet to consume."""
    for path in ("/isr_change_notification", "/admin/delete_topics", "/log_dir_event_notification"):
        if zk.exists(path) and zk.get_children(path):
            return False
    return zk.exists("/admin/preferred_replica_election") is None


# compared in :meth:`Run.view` instead, by role and for the scenario's partitions only (elsewhere they
# depend on where each partition's replicas landed, which differs between the clusters)
_STATE_KEYS = {"leader_epoch": "<epoch>", "controller_epoch": "<epoch>", "isr": "<isr>"}


def tree(zk) -> dict[str, Any]:  # noqa: ANN001
    """:func:`znodes.snapshot`, with the epochs and ISRs of partition states masked too (a
    failover moves them; :meth:`Run.view` compares the scenario's, by role and the epoch
    relative to the topic's creation), and without
    __consumer_offsets' partitions (their count is ``offsets.topic.num.partitions``, 50 by
    default in both, and their ISRs depend on where each landed).  The registrations
    (one path for all brokers, :func:`znodes.normalize_path`) leave out ``log_since``, which
    a minikafka broker started again with an in-memory log adds."""
    out = {p: v for p, v in znodes.snapshot(zk).items()
           if not p.startswith("/brokers/topics/__consumer_offsets/partitions")}
    registration = out.get("/brokers/ids/<id>")
    if isinstance(registration, dict):  # only a restarted in-memory broker of minikafka has it
        out["/brokers/ids/<id>"] = {k: v for k, v in registration.items() if k != "log_since"}
    offsets = out.get("/brokers/topics/__consumer_offsets")
    if isinstance(offsets, dict) and isinstance(offsets.get("partitions"), dict):
        out["/brokers/topics/__consumer_offsets"] = {**offsets, "partitions": f"<{len(offsets['partitions'])} partitions>"}
    for path, value in out.items():
        if path.endswith("/state") and isinstance(value, dict):
            out[path] = {k: _STATE_KEYS.get(k, v) for k, v in value.items()}
    return out


# ----- normalizing Kafka's tools' output ----------------------------------------------------------
def _roles_of(ids: str, roles: dict[int, str]) -> str:
    if ids in ("", "none", "N/A") or ids == "-1":
        return ids or "(none)"
    return ",".join(roles.get(int(i), f"?{i}") for i in ids.split(","))


def topic_describe(text: str, roles: dict[int, str]) -> list[dict[str, str]]:
    """``kafka-topics --describe``: one map per line, ``TopicId`` masked, broker ids as roles."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().split("\t") if c.strip()]
        if not cells or not cells[0].startswith("Topic:"):
            continue
        row = {}
        for cell in cells:
            key, _, value = cell.partition(":")
            value = value.strip()
            if key == "TopicId":
                value = "<id>"
            elif key in ("Leader", "Replicas", "Isr"):
                value = _roles_of(value, roles)
            row[key] = value
        rows.append(row)
    return rows


def group_describe(text: str) -> list[dict[str, str] | str]:
    """``kafka-consumer-groups --describe``: its notes, then one map per row, the members'
    ids, hosts and client ids masked."""
    out: list[dict[str, str] | str] = []
    header: list[str] | None = None
    for line in text.splitlines():
        cells = line.split()
        if not cells:
            continue
        if cells[0] == "GROUP":
            header = cells
        elif header is not None and len(cells) == len(header):
            row = dict(zip(header, cells))
            for key in ("CONSUMER-ID", "HOST", "CLIENT-ID"):
                if row.get(key, "-") != "-":
                    row[key] = "<member>"
            out.append(row)
        else:
            out.append(" ".join(cells))
    return out


# ----- the scenario -------------------------------------------------------------------------------
@dataclass
class Observation:
    """What one cluster showed in one step's state."""

    view: dict  # the partition and the registrations, as roles (see :func:`view`)
    tree: dict  # the masked ZooKeeper tree
    topics: list | None = None  # kafka-topics --describe, normalized
    groups: list | None = None  # kafka-consumer-groups --describe, normalized


class Run:
    """The scenario on one cluster: its roles, its ZooKeeper session, what it observed."""

    def __init__(self, name: str, zookeeper: str, control: Control) -> None:
        from kazoo.client import KazooClient

        self.name = name
        self.control = control
        self.zk = KazooClient(hosts=zookeeper, timeout=10.0)
        self.zk.start(timeout=15)
        self.ids: dict[str, int] = {}  # role -> broker id
        self.base_epoch = 0
        self.observed: dict[str, Observation] = {}
        self.clients: dict[str, Any] = {}
        self.stale_epoch: dict[str, str] = {}

    def close(self) -> None:
        self.zk.stop()
        self.zk.close()

    @property
    def roles(self) -> dict[int, str]:
        return {b: r for r, b in self.ids.items()}

    def wait(self, what: str, done: Callable[[], Any], timeout_s: float = 90) -> None:
        _wait(what, self.name, done, timeout_s)

    def view(self) -> dict:
        """The partition's state and the registrations, broker ids as roles."""
        st = _state(self.zk)
        roles = self.roles
        assignment = (_json(self.zk, f"/brokers/topics/{TOPIC}") or {}).get("partitions", {}).get("0", [])
        return {
            "leader": roles.get(st.get("leader"), "none"),
            "isr": "".join(sorted(roles[b] for b in st.get("isr", []))),
            "replicas": "".join(roles[b] for b in assignment),
            "leader_epoch": f"+{st.get('leader_epoch', 0) - self.base_epoch}",
            "registered": "".join(sorted(roles[b] for b in _registered(self.zk))),
        }

    def isr(self, topic: str | None = None) -> str:
        roles = self.roles
        return "".join(sorted(roles[b] for b in _state(self.zk, topic).get("isr", [])))

    def leader(self) -> str:
        return self.roles.get(_state(self.zk).get("leader"), "none")

    def describe(self, groups: bool = False, without: int | None = None) -> list[subprocess.Popen]:
        """Start kafka-topics (and kafka-consumer-groups) --describe, through every broker but
        ``without``; :meth:`observe` reads them."""
        bootstrap = self.control.bootstrap(without)
        procs = [self.control.tool(TOPIC_COMMAND, "--bootstrap-server", bootstrap, "--describe", "--topic", TOPIC)]
        if groups:
            procs.append(self.control.tool(GROUP_COMMAND, "--bootstrap-server", bootstrap, "--describe",
                                           "--group", GROUP))
        return procs

    def observe(self, step: str, procs: list[subprocess.Popen], **more: str) -> None:
        """Record ``step``'s :class:`Observation` (``more``: further rows of the view), the
        tools started by :meth:`describe` included (they are ended here in any case)."""
        outs = []
        try:
            self.wait("the controller's notifications consumed", lambda: _settled(self.zk), 15)
            obs = Observation(view={**self.view(), **more}, tree=tree(self.zk))
            for proc in procs:
                out, err = proc.communicate(timeout=120)
                if proc.returncode != 0:
                    raise RuntimeError(f"{self.name}: {proc.args[-5]} failed ({proc.returncode}): "
                                       f"{err.strip()[-500:]}")
                outs.append(out)
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        obs.topics = topic_describe(outs[0], self.roles)
        if len(outs) > 1:
            obs.groups = group_describe(outs[1])
        self.observed[step] = obs


def _create(run: Run) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    controller = _json(run.zk, "/controller")["brokerid"]
    others = sorted(_registered(run.zk) - {controller})
    run.ids = {"A": others[0], "B": others[1], "C": controller}
    from confluent_kafka import Producer

    admin = AdminClient({"bootstrap.servers": run.control.bootstrap()})
    assignment = [[run.ids["A"], run.ids["B"], run.ids["C"]]]
    topics = [NewTopic(t, 1, replica_assignment=assignment, config={"min.insync.replicas": "2"})
              for t in (TOPIC, IDLE_TOPIC)]
    for future in admin.create_topics(topics).values():
        future.result(60)
    producer = Producer({"bootstrap.servers": run.control.bootstrap(), "acks": "all"})
    for t in (TOPIC, IDLE_TOPIC):
        producer.produce(t, CREATED_RECORD, partition=0)
    if producer.flush(60):
        raise RuntimeError(f"{run.name}: the first records were not acknowledged")
    for t in (TOPIC, IDLE_TOPIC):  # a follower slow to fetch first may have left the ISR meanwhile: back
        run.wait(f"{t} with a full ISR", lambda t=t: run.isr(t) == "ABC" and _state(run.zk, t).get("leader")
                 == run.ids["A"])
    run.base_epoch = _state(run.zk)["leader_epoch"]


def _isr_shrink(run: Run) -> None:
    from confluent_kafka import Producer

    b = run.ids["B"]
    run.control.signal(b, "STOP")
    paused = time.monotonic()
    try:
        producer = Producer({"bootstrap.servers": run.control.bootstrap(without=b), "acks": "1"})
        producer.produce(TOPIC, SHRINK_RECORD, partition=0)
        if producer.flush(60):
            raise RuntimeError(f"{run.name}: the record produced while a follower is paused was not acknowledged")
        run.wait("the paused follower out of the ISR", lambda: run.isr() == "AC", 30)
        # a caught-up follower of a partition nothing is written to: given three times the lag (the leaders
        # check every half of it), still well before the paused broker's session expires
        deadline = paused + 3 * int(REPLICA_LAG_TIME_MAX_MS) / 1000 + 1
        while run.isr(IDLE_TOPIC) == "ABC" and time.monotonic() < deadline:
            time.sleep(0.1)
        run.observe("ISR shrink", run.describe(without=b), **{"ISR of an idle partition": run.isr(
            IDLE_TOPIC)})
    finally:
        run.control.signal(b, "CONT")
    run.wait("the follower back in the ISR", lambda: run.isr() == "ABC" and run.isr(IDLE_TOPIC) == "ABC")


def _clients(run: Run, kill: Callable[[], None]) -> dict:
    """A producer (acks=all, idempotent) and a consumer group across ``kill``: the error
    names each saw, what the producer's delivery reports said, and what the consumer read."""
    from confluent_kafka import Consumer, KafkaError, Producer

    seen: dict[str, list[str]] = {"producer errors": [], "delivery errors": [], "consumer errors": []}
    acked: list[int] = []
    producer = Producer({"bootstrap.servers": run.control.bootstrap(), "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 90000,
                         "error_cb": lambda e: seen["producer errors"].append(e.name())})

    def delivered(err, msg) -> None:  # noqa: ANN001
        if err is not None:
            seen["delivery errors"].append(err.name())
        else:
            acked.append(msg.offset())

    read: list[bytes] = []
    stop = threading.Event()

    def consume() -> None:
        consumer = Consumer({"bootstrap.servers": run.control.bootstrap(), "group.id": GROUP,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                             "error_cb": lambda e: seen["consumer errors"].append(e.name())})
        try:
            consumer.subscribe([TOPIC])
            while not stop.is_set() and len(read) < RECORDS + 2:
                msg = consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error():
                    if msg.error().code() != KafkaError._PARTITION_EOF:
                        seen["consumer errors"].append(msg.error().name())
                    continue
                read.append(msg.value())
            consumer.commit(asynchronous=False)
        finally:
            consumer.close()

    reader = threading.Thread(target=consume, name=f"fidelity-consumer-{run.name}", daemon=True)
    reader.start()
    try:
        for i in range(RECORDS):
            if i == BEFORE_KILL:
                producer.flush(60)
                kill()
            producer.produce(TOPIC, f"r{i}".encode(), partition=0, on_delivery=delivered)
            producer.poll(0.005)
        left = producer.flush(120)
        deadline = time.monotonic() + 120
        while len(read) < RECORDS + 2 and time.monotonic() < deadline and reader.is_alive():
            time.sleep(0.1)
    finally:
        stop.set()
        reader.join(30)
    expected = [CREATED_RECORD, SHRINK_RECORD] + [f"r{i}".encode() for i in range(RECORDS)]
    return {**{k: sorted(set(v)) for k, v in seen.items()},
            "acknowledged": f"{len(acked)} of {RECORDS}" + (f" ({left} undelivered)" if left else ""),
            "acknowledged offsets": f"2..{RECORDS + 1}" if sorted(acked) == list(range(2, RECORDS + 2))
            else f"{len(set(acked))} distinct",
            "consumer read": "every record once, in order" if read == expected else
            f"{len(read)} records, {len(set(read))} distinct, in order: {read == sorted(read, key=expected.index)}"}


def _leader_kill(run: Run) -> Callable[[], None]:
    a = run.ids["A"]
    run.clients = _clients(run, lambda: run.control.signal(a, "KILL"))
    run.wait("a new leader and the killed broker's registration gone",
             lambda: run.leader() not in ("A", "none") and a not in _registered(run.zk))
    run.observe("leader kill", run.describe(groups=True, without=a))
    return lambda: _restart(run, a)


def _restart(run: Run, broker_id: int) -> Callable[[], None]:
    run.control.start(broker_id)
    return lambda: run.wait(f"broker {run.roles[broker_id]} registered and back in the ISR",
                            lambda: broker_id in _registered(run.zk) and run.isr() == "ABC", 120)


def _preferred_election(run: Run) -> None:
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": run.control.bootstrap()})
    admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, 0)]).result(60)
    run.wait("the preferred replica leading", lambda: run.leader() == "A")
    run.observe("preferred replica election", run.describe())


def _controlled_shutdown(run: Run) -> Callable[[], None]:
    a = run.ids["A"]
    run.control.signal(a, "TERM")
    run.wait("a new leader and the stopped broker's registration gone",
             lambda: run.leader() not in ("A", "none") and a not in _registered(run.zk))
    run.observe("controlled shutdown", run.describe(without=a))
    return lambda: _restart(run, a)


def _reassignment(run: Run) -> None:
    import tempfile

    plan = {"version": 1, "partitions": [{"topic": TOPIC, "partition": 0,
                                          "replicas": [run.ids["B"], run.ids["C"]]}]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="reassign-") as f:
        json.dump(plan, f)
        f.flush()
        proc = run.control.tool(REASSIGN_COMMAND, "--bootstrap-server", run.control.bootstrap(),
                                "--reassignment-json-file", f.name, "--execute")
        out, err = proc.communicate(timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"{run.name}: kafka-reassign-partitions --execute failed: {(err or out).strip()[-500:]}")
    run.wait("the reassignment done", lambda: run.view()["replicas"] == "BC" and run.isr() == "BC"
             and run.zk.exists("/admin/reassign_partitions") is None)
    run.observe("reassignment", run.describe(groups=True))


def _stale_controller_epoch(run: Run) -> None:
    current = int(run.zk.get("/controller_epoch")[0])
    a = run.ids["A"]
    if run.control.kind == "kafka":
        run.stale_epoch = controller_epoch.ask_kafka(run.control.kafka_ports[a], current - 1)
    else:
        run.stale_epoch = controller_epoch.ask_minikafka(run.control.http_ports[a], run.control.secret or "",
                                                         current - 1)


# each step: its name and what it does on one cluster (an action that returns a restart
# leaves a broker down while both clusters are observed, then starts it on both at once)
STEPS: tuple[tuple[str, Callable[[Run], Any]], ...] = (
    ("ISR shrink", _isr_shrink),
    ("leader kill", _leader_kill),
    ("preferred replica election", _preferred_election),
    ("controlled shutdown", _controlled_shutdown),
    ("reassignment", _reassignment),
)
STEP_TEXT = {
    "ISR shrink": "follower B paused (SIGSTOP) until it leaves the ISR",
    "leader kill": "leader A SIGKILLed under a producer and a consumer group, started again after",
    "preferred replica election": "ElectLeaders PREFERRED: A leads again",
    "controlled shutdown": "leader A gets SIGTERM, started again after",
    "reassignment": "kafka-reassign-partitions --execute: the assignment goes from A,B,C to B,C",
}


def run(kafka: Run, ours: Run) -> None:
    """The scenario on both clusters, step by step; each :class:`Run` keeps what it observed."""
    runs = (kafka, ours)
    for r in runs:
        _create(r)
    for _step, action in STEPS:
        restarts = [action(r) for r in runs]
        waits = [restart() for restart in restarts if restart is not None]
        for wait in waits:
            wait()
    for r in runs:
        _stale_controller_epoch(r)


# ----- comparing ----------------------------------------------------------------------------------
def tree_diffs(kafka: Run, ours: Run) -> list[dict]:
    """The ZooKeeper differences of every step, each once with the first step that showed it."""
    seen: dict[tuple, dict] = {}
    for step, _ in STEPS:
        for diff in znodes.compare(kafka.observed[step].tree, ours.observed[step].tree):
            key = (diff["path"], diff["kind"], json.dumps(diff["kafka"], sort_keys=True),
                   json.dumps(diff["ours"], sort_keys=True))
            seen.setdefault(key, {**diff, "step": step})
    return list(seen.values())


def rows(kafka: Run, ours: Run) -> list[dict]:
    """One row per step and thing compared: ``{"step", "what", "kafka", "ours"}``."""
    out = []
    for step, _ in STEPS:
        k, o = kafka.observed[step], ours.observed[step]
        for key in k.view:
            out.append({"step": step, "what": f"partition {key}", "kafka": k.view[key], "ours": o.view[key]})
        out.append({"step": step, "what": "kafka-topics --describe", "kafka": k.topics, "ours": o.topics})
        if k.groups is not None:
            out.append({"step": step, "what": "kafka-consumer-groups --describe", "kafka": k.groups,
                        "ours": o.groups})
    for key in ("producer errors", "delivery errors", "acknowledged", "acknowledged offsets", "consumer errors",
                "consumer read"):
        out.append({"step": "leader kill", "what": f"clients: {key}", "kafka": kafka.clients[key],
                    "ours": ours.clients[key]})
    for request in controller_epoch.REQUESTS:
        out.append({"step": "old controller epoch", "what": f"{request} from epoch current-1",
                    "kafka": kafka.stale_epoch[request], "ours": ours.stale_epoch[request]})
    return out


def differing_fields(kafka: list, ours: list) -> set[str]:
    """The columns in which two normalized tool outputs differ: a column one of them
    lacks, ``Isr order`` when the ISRs hold the same brokers in another order, ``lines``
    when a line differs otherwise or the line counts do."""
    out: set[str] = set()
    if len(kafka) != len(ours):
        out.add("lines")
    for x, y in zip(kafka, ours):
        if not (isinstance(x, dict) and isinstance(y, dict)):
            if x != y:
                out.add("lines")
            continue
        for key in set(x) | set(y):
            if x.get(key) == y.get(key):
                continue
            if key == "Isr" and key in x and key in y and sorted(x[key].split(",")) == sorted(y[key].split(",")):
                out.add("Isr order")
            else:
                out.add(key)
    return out




def observe(kafka_dir: str, ours_dir: str) -> tuple[Run, Run]:
    """Run the scenario on the reference cluster in ``kafka_dir`` and the minikafka cluster
    in ``ours_dir`` (both of 3 brokers, started with :data:`BROKER_CONFIGS`); the two
    finished runs."""
    from pathlib import Path

    from ..cluster import launcher
    from ..cluster.state import load
    from . import cluster as reference

    ref = reference.ReferenceState.load(kafka_dir)
    ours = load(ours_dir)
    secret = Path(launcher.cluster_secret_file(Path(ours_dir))).read_text().strip()
    kafka = Run("Kafka", ref.zookeeper_connect,
                Control("kafka", kafka_dir, {i: b.port for i, b in ref.brokers.items()}, ref.jars))
    mini = Run("minikafka", ours.zookeeper.connect,
               Control("minikafka", ours_dir, {i: b.kafka_port for i, b in ours.brokers.items()}, ref.jars,
                       {i: b.port for i, b in ours.brokers.items()}, secret))
    try:
        run(kafka, mini)
    finally:
        kafka.close()
        mini.close()
    return kafka, mini
