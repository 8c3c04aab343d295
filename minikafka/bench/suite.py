"""``minikafka bench suite``: every scenario, each run several times, one table.

Without ``--bootstrap-server`` the suite starts its own 3-broker cluster (memory
storage, free ports, a temporary folder) and stops it at the end; with one it runs the
scenarios that need no broker control against that cluster (failover and memory need
their own cluster and are then skipped).

Each run's topics are deleted after it, so that every row measures its own scenario
rather than the partitions the earlier ones left (a follower's fetch still visits each
partition it replicates; docs/performance.md measures idle partitions on their own).

Every throughput row shows its ratio to the yardsticks measured in the same run (see
:mod:`.yardsticks`): ``limit`` (the same bytes through a bare aiohttp handler) and
``mock`` (librdkafka's mock cluster through kcat, when kcat is installed).

The acks=all produce scenario also runs our Producer's pure-Python peers, kafka-python's
``KafkaProducer`` and aiokafka's ``AIOKafkaProducer`` (each in a process of its own, through
the Kafka listener, linger 5 ms as ours); our row's ``vs_peers`` is its median over the
faster peer's.

The cost of transactions is a pair of rows per client (ours and confluent-kafka): the
idempotent producer and the transactional one on the same records, a commit every
:data:`~.scenarios.TXN_COMMIT_EVERY` records, with the ratio of each run's two figures.
The cost of a delivery callback per record is a pair of rows per client (our blocking
``Producer``, our ``AIOProducer``, confluent-kafka's ``on_delivery``): the same records
without and with a callback per record in each run (:mod:`.callbacks`), with the ratio.

With ``against="kafka"`` the scenarios of :mod:`.versus` run on a fresh cluster of ours,
which is then stopped, and after it on an Apache Kafka 3.9 cluster (started in a folder
of its own unless one runs in ``reference_dir``, and stopped again if started here): the
two never run at once.  Those rows carry Kafka's figure, ours over Kafka's, and the
goal (:class:`.versus.Goal`) with whether it is met.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable

from ..cluster import launcher
from ..client.sync import Admin
from ..errors import ClientError, KafkaError
from . import callbacks
from . import scenarios as sc
from . import versus
from .figures import Figure, collect, fmt
from .workload import Workload
from .yardsticks import LimitServer, limit_consume, limit_produce, mock_produce


@dataclass
class Sizes:
    """How much work each scenario does."""

    produce_records: int
    consume_records: int
    latency_rate: int
    latency_seconds: float
    memory_records: int
    catchup_records: int
    e2e_records: int = 2_000  # Kafka's EndToEndLatency: one record at a time
    acks_latency_rate: int = 1_000  # acks=all, linger 0: a record at a time, no batching to hide a wait
    acks_latency_seconds: float = 10
    linger0_rate: int = 10_000  # acks=all, linger 0 at the latency row's rate: only in-flight limits batch
    value_size: int = 100
    runs: int = 3
    warmup_records: int = 0  # --against kafka: an untimed ProducerPerformance run first on each cluster


FULL = Sizes(produce_records=200_000, consume_records=2_000_000, latency_rate=10_000, latency_seconds=10,
             memory_records=500_000, catchup_records=1_000_000, warmup_records=200_000)
QUICK = Sizes(produce_records=20_000, consume_records=100_000, latency_rate=2_000, latency_seconds=2,
              memory_records=50_000, catchup_records=50_000, e2e_records=300, acks_latency_seconds=2,
              linger0_rate=2_000)


@dataclass
class Row:
    """One line of the table: a scenario with one client, its figure over the runs."""

    scenario: str
    client: str
    figure: Figure
    limit: Figure | None = None
    mock: Figure | None = None
    extra: dict[str, Figure] = field(default_factory=dict)
    skipped: str | None = None
    compared: versus.Compared | None = None  # a row measured on Kafka 3.9 as well
    kafka: Figure | None = None
    kafka_extra: dict[str, Figure] = field(default_factory=dict)

    def versus_kafka(self) -> str:
        """The "vs Kafka" cell: ours over Kafka's, saying which way is better."""
        ratio = self.ratio(self.kafka)
        if ratio is None or self.compared is None:
            return ""
        better = "higher" if self.compared.higher_is_better else "lower"
        return f"{ratio:.2f}x Kafka's {self.compared.measure} ({better} is better)"

    def goal_met(self) -> bool | None:
        if self.compared is None or self.compared.goal is None or self.ratio(self.kafka) is None:
            return None
        assert self.kafka is not None
        return self.compared.goal.met(self.figure.median, self.kafka.median)

    def goal_cell(self) -> str:
        if self.compared is None or self.compared.goal is None:
            return ""
        met = self.goal_met()
        return f"{self.compared.goal.text}: " + ("no figure" if met is None else "met" if met else "not met")

    def ratio(self, yardstick: Figure | None) -> float | None:
        if yardstick is None or not yardstick.values or not self.figure.values:
            return None
        return self.figure.median / yardstick.median

    def to_json(self) -> dict:
        out: dict = {"scenario": self.scenario, "client": self.client}
        if self.skipped:
            out["skipped"] = self.skipped
            return out
        out[self.figure.name] = self.figure.to_json()
        for name, fig in self.extra.items():
            out[name] = fig.to_json()
        for name, yard in (("limit", self.limit), ("mock", self.mock)):
            if yard is not None:
                out[name] = yard.to_json()
                out[f"ratio_to_{name}"] = self.ratio(yard)
        if self.compared is not None:
            out["kafka"] = {self.figure.name: self.kafka.to_json() if self.kafka else None,
                            **{name: fig.to_json() for name, fig in self.kafka_extra.items()}}
            out["ratio_to_kafka"] = self.ratio(self.kafka)
            out["higher_is_better"] = self.compared.higher_is_better
            if self.compared.goal is not None:
                out["goal"] = {"text": self.compared.goal.text, "met": self.goal_met()}
        return out


# The brokers' own figures over a latency run (:mod:`.broker_metrics`).
PAUSE_FIGURES = ("loop_lag_p99_ms", "loop_lag_max_ms", "loop_stalls", "gc_pause_ms")


def _extras(runs: list[dict], names: tuple[str, ...]) -> dict[str, Figure]:
    """The figures ``names`` of the runs, for a row's "also" column (milliseconds but the stall count)."""
    return {name: collect(name, "" if name == "loop_stalls" else "ms", runs, name) for name in names}


class Suite:
    """Runs the scenarios; ``say`` gets one progress line per step."""

    def __init__(self, sizes: Sizes, bootstrap: str | None = None, kafka_bootstrap: str | None = None,
                 say: Callable[[str], None] = print, cluster_dir: str | None = None, against: str | None = None,
                 reference_dir: str | None = None, only_compared: bool = False) -> None:
        if against not in (None, "kafka"):
            raise ClientError(f"--against takes kafka, not {against!r}")
        if against is None and (reference_dir or only_compared):
            raise ClientError("--reference-dir and --only-compared go with --against kafka")
        self.sizes = sizes
        self.against = against
        self.reference_dir = reference_dir
        self.only_compared = only_compared
        self.kafka: dict = {}  # the Kafka cluster of the run: version, pids, started here
        self.notes: list[str] = []
        self.say = say
        self.rows: list[Row] = []
        self._dir: str | None = None
        self._wanted_dir = cluster_dir  # None: a temporary folder
        self._given = (bootstrap, kafka_bootstrap)
        self._seq = 0
        self._made: list[tuple[str, str]] = []  # (bootstrap, topic) of the topics made here

    # ----- cluster ---------------------------------------------------------
    def _start_cluster(self) -> sc.Target:
        bootstrap, kafka_bootstrap = self._given
        if bootstrap:
            return sc.Target(bootstrap, kafka_bootstrap)
        self._dir = self._wanted_dir or tempfile.mkdtemp(prefix="minikafka-bench-")
        self.say(f"starting a 3-broker cluster in {self._dir}")
        return sc.start_cluster(self._dir)

    def _stop_cluster(self) -> None:
        if self._dir is not None:
            try:
                launcher.down(self._dir)
            finally:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None

    def _topic(self, name: str, target: sc.Target, partitions: int, rf: int, min_isr: int | None = None) -> str:
        self._seq += 1
        topic = f"bench-{name}-{os.getpid()}-{self._seq}"
        sc.create_topic(target, topic, partitions, rf, min_isr)
        self._made.append((target.bootstrap, topic))
        return topic

    def _drop_topics_since(self, mark: int) -> None:
        """Delete the topics made since ``mark`` (a run's own), so that later rows do not
        replicate their partitions: each row measures its scenario, not the leftovers of
        the ones before it.  A deletion that does not finish in time is left to finish
        on its own."""
        made, self._made = self._made[mark:], self._made[:mark]
        for bootstrap, topic in made:
            try:
                with Admin(bootstrap) as admin:
                    admin.delete_topic(topic, timeout_ms=10_000)
            except KafkaError as exc:
                self.say(f"{topic} is left in place: {exc}")

    # ----- running ---------------------------------------------------------
    def _repeat(self, label: str, fn: Callable[[int], dict | None], drop_each_run: bool = True) -> list[dict] | None:
        """``fn`` run after run; the topics each run made are deleted after it, or after the
        last run without ``drop_each_run`` (the memory scenario: the memory a deleted topic
        frees would hold the next run's records, hiding their cost)."""
        runs = []
        first_mark = len(self._made)
        try:
            for i in range(self.sizes.runs):
                self.say(f"{label}: run {i + 1} of {self.sizes.runs}")
                mark = len(self._made)
                try:
                    out = fn(i)
                finally:
                    if drop_each_run:
                        self._drop_topics_since(mark)
                if out is None:
                    return None
                runs.append(out)
            return runs
        finally:
            self._drop_topics_since(first_mark)

    def run(self) -> list[Row]:
        """Run everything; the clusters started here are stopped also on failure."""
        if self.against == "kafka":
            self._check_against_kafka()
        if not self.only_compared:
            self._run_ours()
        if self.against == "kafka":
            self._run_compared()
        return self.rows

    def _run_ours(self) -> None:
        s = self.sizes
        work = Workload(s.produce_records, s.value_size)
        consume_work = Workload(s.consume_records, s.value_size)
        target = self._start_cluster()
        try:
            # first: later scenarios grow the brokers' heaps, which hides the growth
            self._memory_row(target)
            limit_p, limit_c = self._limit_figures(work, consume_work)
            mock_all = self._produce_rows(target, work, limit_p)
            self._transaction_rows(target, work, limit_p, mock_all)
            self._callback_rows(target, work, limit_p, mock_all)
            self._consume_rows(target, consume_work, limit_c)
            self._latency_rows(target)
            self._failover_rows(target)
            self._catchup_row(target)
        finally:
            work.close()
            consume_work.close()
            self._stop_cluster()

    def _memory_row(self, target: sc.Target) -> None:
        """RSS per stored record copy (on the suite's own cluster only)."""
        s = self.sizes
        mem_work = Workload(s.memory_records, s.value_size)
        mem = self._repeat("memory", lambda i: sc.memory(target, mem_work, self._topic("memory", target, 3, 3, 2)),
                           drop_each_run=False)
        if mem is None:
            self.rows.append(Row("memory (RSS per stored record copy)", "brokers", Figure("bytes_per_record", "B", ()),
                                 skipped="needs the suite's own cluster"))
        else:
            self.rows.append(Row("memory (RSS per stored record copy)", "brokers",
                                 collect("bytes_per_record", "B", mem, "bytes_per_record")))

    def _limit_figures(self, work: Workload, consume_work: Workload) -> tuple[Figure, Figure]:
        """The produce and consume ``limit`` yardsticks: the scenarios' bytes posted to and
        fetched from a bare handler (what our transport allows on this machine)."""
        with LimitServer() as server:
            limit_p = collect("records_per_s", "records/s",
                              self._repeat("limit produce", lambda i: limit_produce(server, work, 3)) or [],
                              "records_per_s")
            limit_c = collect("records_per_s", "records/s",
                              self._repeat("limit consume", lambda i: limit_consume(server, consume_work, 3)) or [],
                              "records_per_s")
        return limit_p, limit_c

    def _produce_rows(self, target: sc.Target, work: Workload, limit_p: Figure) -> Figure | None:
        """The produce rows (RF1 acks=1, RF3 acks=1, RF3 acks=all) of every client; returns the
        mock acks=all figure, the yardstick of the rows after them."""
        s = self.sizes
        mocks = {acks: self._repeat(f"mock produce acks={acks}", lambda i, a=acks: mock_produce(work, a))
                 for acks in ("1", "all")}
        for name, rf, acks in (("RF1 acks=1", 1, "1"), ("RF3 acks=1", 3, "1"), ("RF3 acks=all min.isr=2", 3, "all")):
            mock_runs = mocks["1" if acks == "1" else "all"]
            mock_fig = collect("records_per_s", "records/s", mock_runs, "records_per_s") if mock_runs else None
            py = self._repeat(f"produce {name} python", lambda i, rf=rf, acks=acks: sc.produce_python(
                target, work, self._topic("produce", target, 3, rf, 2 if rf == 3 else None),
                "all" if acks == "all" else 1))
            py_row = Row(f"produce {name}", "python", collect("records_per_s", "records/s", py or [],
                                                              "records_per_s"), limit_p, mock_fig)
            self.rows.append(py_row)
            if acks == "all":
                bulk = self._repeat(f"produce {name} python send_many", lambda i, rf=rf: sc.produce_python(
                    target, work, self._topic("produce", target, 3, rf, 2), "all", bulk=True))
                self.rows.append(Row(f"produce {name}", "python send_many", collect(
                    "records_per_s", "records/s", bulk or [], "records_per_s"), limit_p, mock_fig))
            kc = self._repeat(f"produce {name} kcat", lambda i, rf=rf, acks=acks: sc.produce_kcat(
                target, work, self._topic("produce", target, 3, rf, 2 if rf == 3 else None), acks))
            self.rows.append(self._row_or_skip(f"produce {name}", "kcat (C)", kc, limit_p, mock_fig,
                                               "needs kcat and the Kafka listener"))
            if acks == "all":
                pp = self._repeat(f"produce {name} ProducerPerformance", lambda i, rf=rf: sc.producer_performance(
                    target, self._topic("produce", target, 3, rf, 2), s.produce_records, s.value_size, "all"))
                row = self._row_or_skip(f"produce {name}", "ProducerPerformance (Java)", pp, limit_p, mock_fig,
                                        sc.NEEDS_JAVA)
                if pp:
                    row.extra["p99_ms"] = collect("p99_ms", "ms", pp, "p99_ms")
                self.rows.append(row)
                self._peer_rows(target, work, f"produce {name}", py_row, limit_p, mock_fig)
        return collect("records_per_s", "records/s", mocks["all"], "records_per_s") if mocks["all"] else None

    def _consume_rows(self, target: sc.Target, consume_work: Workload, limit_c: Figure) -> None:
        """The consume rows of every client and Spark's count, from one topic written first."""
        s = self.sizes
        self.say(f"consume: writing {s.consume_records:,} records")
        ctopic = self._topic("consume", target, 3, 3, 2)
        sc.produce_python(target, consume_work, ctopic, "all")
        py = self._repeat("consume python", lambda i: sc.consume_python(target, ctopic))
        self.rows.append(Row("consume", "python", collect("records_per_s", "records/s", py or [], "records_per_s"),
                             limit_c))
        for mode, client in (("values", "python poll_batches+values"), ("arrow", "python poll_batches+to_arrow")):
            if mode == "arrow" and importlib.util.find_spec("pyarrow") is None:
                continue
            pb = self._repeat(f"consume {client}", lambda i, mode=mode: sc.consume_python(target, ctopic, mode))
            self.rows.append(Row("consume", client, collect("records_per_s", "records/s", pb or [], "records_per_s"),
                                 limit_c))
        kc = self._repeat("consume kcat", lambda i: sc.consume_kcat(target, ctopic))
        self.rows.append(self._row_or_skip("consume", "kcat (C)", kc, limit_c, None,
                                           "needs kcat and the Kafka listener"))
        cp = self._repeat("consume ConsumerPerformance", lambda i: sc.consumer_performance(target, ctopic))
        row = self._row_or_skip("consume", "ConsumerPerformance (Java)", cp, limit_c, None, sc.NEEDS_JAVA)
        if cp:
            row.extra["with_join_records_per_s"] = collect("with_join_records_per_s", "records/s", cp,
                                                           "with_join_records_per_s")
        self.rows.append(row)
        self.say(f"spark: counting {s.consume_records:,} records {s.runs} times (the session start is not timed)")
        sp = sc.spark_count(target, ctopic, s.runs)
        self.rows.append(self._row_or_skip("spark count (minikafka source)", "spark local[2]", sp, None, None,
                                           "needs pyspark (pip install 'minikafka[spark]')"))

    def _latency_rows(self, target: sc.Target) -> None:
        """acks=all latency at a fixed rate, with linger 0, and Kafka's EndToEndLatency."""
        s = self.sizes
        lat = self._repeat("latency", lambda i: sc.with_broker_pauses(target, lambda: sc.latency(
            target, self._topic("latency", target, 3, 3, 2), s.latency_rate, s.latency_seconds, s.value_size)))
        self.rows.append(Row(f"latency acks=all RF3 at {s.latency_rate:,}/s", "python",
                             collect("p50_ms", "ms", lat or [], "p50_ms"),
                             extra=_extras(lat or [], ("p99_ms", "p999_ms") + PAUSE_FIGURES)))
        self._acks_latency_rows(target)
        e2e = self._repeat("EndToEndLatency", lambda i: sc.end_to_end_latency(
            target, self._topic("e2e", target, 1, 3, 2), s.e2e_records, s.value_size))
        e2e_label = f"end-to-end latency acks=all RF3, one record at a time ({s.e2e_records:,})"
        if e2e is None:
            self.rows.append(Row(e2e_label, "EndToEndLatency (Java)", Figure("p50_ms", "ms", ()),
                                 skipped=sc.NEEDS_JAVA))
        else:
            self.rows.append(Row(e2e_label, "EndToEndLatency (Java)", collect("p50_ms", "ms", e2e, "p50_ms"),
                                 extra={"p99_ms": collect("p99_ms", "ms", e2e, "p99_ms"),
                                        "p999_ms": collect("p999_ms", "ms", e2e, "p999_ms"),
                                        "avg_ms": collect("avg_ms", "ms", e2e, "avg_ms")}))

    def _failover_rows(self, target: sc.Target) -> None:
        """Time to the first acknowledgement after the leader or controller is killed, or the
        leader shut down."""
        for how, label in (("leader", "leader SIGKILL"), ("controller", "controller SIGKILL"),
                           ("controlled", "controlled shutdown of the leader")):
            fo = self._repeat(f"failover {how}", lambda i, how=how: sc.failover(
                target, self._topic("failover", target, 3, 3, 2), how))
            if fo is None:
                self.rows.append(Row(f"failover: {label}", "python", Figure("to_first_ack_ms", "ms", ()),
                                     skipped="needs the suite's own cluster"))
                continue
            self.rows.append(Row(f"failover: {label}", "python", collect("to_first_ack_ms", "ms", fo,
                                                                         "to_first_ack_ms"),
                                 extra={"longest_stall_ms": collect("longest_stall_ms", "ms", fo,
                                                                    "longest_stall_ms"),
                                        "failed": collect("failed", "records", fo, "failed")}))

    def _catchup_row(self, target: sc.Target) -> None:
        """How fast a follower restarted empty catches up."""
        s = self.sizes
        cu_work = Workload(s.catchup_records, s.value_size)
        cu = self._repeat("catchup", lambda i: sc.catchup(target, cu_work, self._topic("catchup", target, 1, 3, 2)))
        if cu is None:
            self.rows.append(Row("catch-up of a follower restarted empty", "brokers", Figure("mb_per_s", "MB/s", ()),
                                 skipped="needs the suite's own cluster"))
        else:
            self.rows.append(Row(f"catch-up of a follower restarted empty ({s.catchup_records:,} records)",
                                 "brokers", collect("mb_per_s", "MB/s", cu, "mb_per_s"),
                                 extra={"seconds": collect("seconds", "s", cu, "seconds"),
                                        "refetched_mb": collect("refetched_mb", "MB", cu, "refetched_mb"),
                                        "topic_mb_per_s": collect("topic_mb_per_s", "MB/s", cu,
                                                                  "topic_mb_per_s")}))

    def _acks_latency_rows(self, target: sc.Target) -> None:
        """acks=all with linger 0, at a low fixed rate: our blocking Producer, our asyncio
        client (producer and consumer on one loop), then librdkafka in a process of its
        own through the Kafka listener (a consumer beside each); and at the latency row's
        rate, where only the clients' limits on requests in flight make batches: our
        asyncio client and librdkafka."""
        s = self.sizes
        both = (("python asyncio", sc.acks_latency_asyncio, ""),
                ("confluent-kafka (C)", sc.acks_latency_rdkafka, sc.NEEDS_CONFLUENT))
        for rate, clients in ((s.acks_latency_rate, (("python", sc.acks_latency_python, ""),) + both),
                              (s.linger0_rate, both)):
            label = f"latency acks=all RF3 at {rate:,}/s, linger 0 (send to ack)"
            for client, fn, why in clients:
                runs = self._repeat(f"latency at {rate:,}/s, linger 0, {client}", lambda i, fn=fn, rate=rate: (
                    sc.with_broker_pauses(target, lambda: fn(target, self._topic("acks-latency", target, 3, 3, 2),
                                                             rate, s.acks_latency_seconds, s.value_size))))
                if runs is None:
                    self.rows.append(Row(label, client, Figure("p50_ms", "ms", ()), skipped=why))
                    continue
                self.rows.append(Row(label, client, collect("p50_ms", "ms", runs, "p50_ms"), extra=_extras(
                    runs, ("p99_ms", "p999_ms", "e2e_p50_ms", "e2e_p99_ms", "e2e_p999_ms") + PAUSE_FIGURES)))

    def _peer_rows(self, target: sc.Target, work: Workload, scenario: str, ours: Row, limit: Figure,
                   mock: Figure | None) -> None:
        """The pure-Python peers of our Producer on the same records (kafka-python and
        aiokafka, each in a process of its own through the Kafka listener, linger 5 ms), and
        ``vs_peers`` on our row: its median over the faster peer's."""
        peers = []
        for client in sc.PEER_MODULES:
            runs = self._repeat(f"{scenario} {client}", lambda i, c=client: sc.produce_peer(
                target, work, self._topic("produce", target, 3, 3, 2), c))
            row = self._row_or_skip(scenario, client, runs, limit, mock, sc.needs_peer(client))
            self.rows.append(row)
            if not row.skipped and row.figure.values:
                peers.append(row.figure.median)
        if peers and ours.figure.values:
            ours.extra["vs_peers"] = Figure("vs_peers", "x", (ours.figure.median / max(peers),))

    def _transaction_rows(self, target: sc.Target, work: Workload, limit: Figure, mock: Figure | None) -> None:
        """The cost of transactions: per client, the idempotent producer and the
        transactional one (a commit every :data:`~.scenarios.TXN_COMMIT_EVERY` records)
        on the same records, alternating within each run; ``vs_idempotent`` is the
        transactional figure over the idempotent one of the same run."""
        every = sc.TXN_COMMIT_EVERY
        base = "produce RF3 acks=all min.isr=2"
        for client, label in (("python", "python"), ("confluent-kafka", "confluent-kafka (C)")):
            runs = self._repeat(f"transactions {client}", lambda i, c=client: sc.transaction_cost(
                target, work, (self._topic("idempotent", target, 3, 3, 2), self._topic("txn", target, 3, 3, 2)), c))
            if runs is None:
                for scenario in (f"{base} idempotent", f"{base} transactional, a commit every {every:,}"):
                    self.rows.append(Row(scenario, label, Figure("records_per_s", "records/s", ()),
                                         skipped="needs confluent-kafka and the Kafka listener"))
                continue
            self.rows.append(Row(f"{base} idempotent", label, collect(
                "records_per_s", "records/s", runs, "idempotent_records_per_s"), limit, mock))
            self.rows.append(Row(f"{base} transactional, a commit every {every:,}", label,
                                 collect("records_per_s", "records/s", runs, "records_per_s"), limit, mock,
                                 extra={"vs_idempotent": collect("vs_idempotent", "x", runs, "ratio")}))

    def _callback_rows(self, target: sc.Target, work: Workload, limit: Figure, mock: Figure | None) -> None:
        """The cost of a delivery callback per record (:mod:`.callbacks`): per client, the
        same records without and with a callback per record, alternating within each run;
        ``vs_plain`` is the figure with the callback over the one without, of the same run."""
        base = "produce RF3 acks=all min.isr=2"
        for client in callbacks.CLIENTS:
            label = "confluent-kafka (C)" if client == "confluent-kafka" else client
            runs = self._repeat(f"delivery callbacks {client}", lambda i, c=client: callbacks.callback_cost(
                target, work, (self._topic("plain", target, 3, 3, 2), self._topic("callback", target, 3, 3, 2)), c, i))
            if runs is None:
                for scenario in (f"{base}, no callback (paired)", f"{base}, a delivery callback per record"):
                    self.rows.append(Row(scenario, label, Figure("records_per_s", "records/s", ()),
                                         skipped=sc.NEEDS_CONFLUENT))
                continue
            self.rows.append(Row(f"{base}, no callback (paired)", label, collect(
                "records_per_s", "records/s", runs, "plain_records_per_s"), limit, mock))
            self.rows.append(Row(f"{base}, a delivery callback per record", label,
                                 collect("records_per_s", "records/s", runs, "records_per_s"), limit, mock,
                                 extra={"vs_plain": collect("vs_plain", "x", runs, "ratio")}))

    # ----- against Kafka ---------------------------------------------------
    def _check_against_kafka(self) -> None:
        from ..reference import cluster as reference
        if not versus.kw.available():
            raise ClientError(f"--against kafka {versus.kw.NEEDS_CONFLUENT}")
        if sc.kafka_tools_jars() is None:
            raise ClientError(f"--against kafka {sc.NEEDS_JAVA}")
        reference.find_jars()  # Kafka 3.9's broker jars, fetched now rather than after our half

    def _new_topic(self, kind: str) -> str:
        self._seq += 1
        return f"bench-{kind}-{os.getpid()}-{self._seq}"

    def _run_compared(self) -> None:
        """The compared scenarios on a fresh cluster of ours, which is stopped, then on Kafka 3.9."""
        from ..reference import cluster as reference
        s = self.sizes
        self.say("against Kafka: the compared scenarios on a fresh cluster of ours first")
        target = self._start_cluster()
        try:
            ours = versus.run_side(versus.minikafka_side(target), s, self._new_topic, self.say)
        finally:
            self._stop_cluster()
        given = self.reference_dir is not None and os.path.exists(os.path.join(self.reference_dir, reference.STATE_FILE)) \
            and bool(versus.reference_pids_alive(self.reference_dir))
        folder = self.reference_dir or tempfile.mkdtemp(prefix="minikafka-bench-kafka-")
        if given:
            state = reference.ReferenceState.load(folder)
            if len(state.brokers) < 3 or len(versus.reference_pids_alive(folder)) != len(state.pids()):
                raise ClientError(f"the reference cluster in {folder} needs 3 running brokers and its ZooKeeper "
                                  f"(minikafka reference status --dir {folder})")
            self.say(f"using the running Kafka {state.version} cluster in {folder} (left running)")
            self.notes.append(f"Kafka {state.version}: the running reference cluster in {folder}, idle while "
                              "minikafka's scenarios ran")
        else:
            self.say(f"minikafka's cluster is stopped; starting Kafka 3.9 (ZooKeeper and 3 brokers, "
                     f"-Xmx{reference.HEAP} each) in {folder}")
            try:
                state = reference.up(folder, brokers=3, progress=self.say)
            except BaseException:
                if self.reference_dir is None:
                    shutil.rmtree(folder, ignore_errors=True)
                raise
            self.notes.append(f"Kafka {state.version} (ZooKeeper mode, 3 brokers, -Xmx{reference.HEAP}) ran after "
                              "minikafka's cluster was stopped: the two never ran at once")
        self.kafka = {"version": state.version, "dir": folder, "started_here": not given, "pids": state.pids()}
        try:
            theirs = versus.run_side(versus.kafka_side(folder), s, self._new_topic, self.say)
        finally:
            if not given:
                self.say(f"stopping Kafka {state.version}")
                # every process it ran, the brokers started again by the scenarios included
                self.kafka["pids"] = sorted(set(self.kafka["pids"]) | set(reference.ReferenceState.load(folder).pids()))
                reference.down(folder)
                shutil.rmtree(folder, ignore_errors=True)
        self.notes.append(f"both clusters: zookeeper.session.timeout.ms={versus.SESSION_TIMEOUT_MS} (a SIGKILLed "
                          "broker is noticed when its session expires), the same clients through the Kafka protocol")
        for c in versus.compared(s):
            mine, kafka = ours[c.key], theirs[c.key]
            if mine is None and kafka is None:
                self.rows.append(Row(c.scenario, c.client, Figure(c.figure, c.unit, ()),
                                     skipped="needs the suite's own cluster", compared=c))
                continue
            extra = {key: collect(key, unit, mine or [], key) for key, unit in c.extras}
            kafka_extra = {key: collect(key, unit, kafka or [], key) for key, unit in c.extras}
            self.rows.append(Row(c.scenario, c.client, collect(c.figure, c.unit, mine or [], c.figure), extra=extra,
                                 compared=c, kafka=collect(c.figure, c.unit, kafka or [], c.figure),
                                 kafka_extra=kafka_extra))

    @staticmethod
    def _row_or_skip(scenario: str, client: str, runs: list[dict] | None, limit: Figure | None,
                     mock: Figure | None, why: str) -> Row:
        if runs is None:
            return Row(scenario, client, Figure("records_per_s", "records/s", ()), skipped=why)
        return Row(scenario, client, collect("records_per_s", "records/s", runs, "records_per_s"), limit, mock)


def _cell(fig: Figure | None) -> str:
    return fmt(fig.median) if fig is not None and fig.values else "-"


def table(rows: list[Row], runs: int, notes: list[str] = ()) -> str:
    """The rows as an aligned text table (medians, with min-max).  With rows measured on
    Kafka too, the columns ``Kafka 3.9`` (its median), ``vs Kafka`` (ours over Kafka's, which
    way is better) and ``goal``, and a footer of the goals met and of ``notes``."""
    with_kafka = any(r.compared is not None for r in rows)
    head = ["scenario", "client", f"median of {runs}", "min-max", "unit", "vs limit", "vs mock"]
    if with_kafka:
        head += ["Kafka 3.9", "vs Kafka (ours / Kafka)", "goal"]
    head.append("also")
    lines = [head]
    for r in rows:
        if r.skipped:
            lines.append([r.scenario, r.client, "skipped", r.skipped] + [""] * (len(head) - 4))
            continue
        f = r.figure
        lim, mock = r.ratio(r.limit), r.ratio(r.mock)
        also = ", ".join(f"{name} {_cell(fig)}" + (f" (Kafka {_cell(r.kafka_extra.get(name))})"
                                                     if r.compared is not None else "")
                         for name, fig in r.extra.items())
        line = [r.scenario, r.client, _cell(f), f"{fmt(f.min)}-{fmt(f.max)}" if f.values else "-", f.unit,
                f"{lim:.3f}x" if lim is not None else "", f"{mock:.3f}x" if mock is not None else ""]
        if with_kafka:
            line += [_cell(r.kafka) if r.compared is not None else "", r.versus_kafka(), r.goal_cell()]
        lines.append(line + [also])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines]
    goals = [r for r in rows if r.compared is not None and r.compared.goal is not None]
    if goals:
        out += ["", "goals against Kafka (ours / Kafka from the same run):"]
        for r in goals:
            met = r.goal_met()
            assert r.compared is not None and r.compared.goal is not None
            figures = "" if met is None else f" (ours {_cell(r.figure)} {r.figure.unit}, Kafka {_cell(r.kafka)})"
            out.append(f"  {r.scenario.removesuffix(' (both clusters)')}, {r.client}: {r.compared.goal.text}: "
                       + ("no figure" if met is None else "met" if met else "NOT met") + figures)
    out += [f"note: {n}" for n in notes]
    return "\n".join(out)


def to_json(rows: list[Row], sizes: Sizes, kafka: dict | None = None, notes: list[str] = ()) -> dict:
    out = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cores": os.cpu_count(),
           "sizes": sizes.__dict__, "rows": [r.to_json() for r in rows]}
    if kafka:
        out["kafka"] = kafka
        out["notes"] = list(notes)
    return out


def write_json(path: str, rows: list[Row], sizes: Sizes, kafka: dict | None = None, notes: list[str] = ()) -> None:
    with open(path, "w") as f:
        json.dump(to_json(rows, sizes, kafka, notes), f, indent=2)
