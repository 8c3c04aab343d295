"""``minikafka bench``: the benchmark suite, and single produce/consume measurements.

    minikafka bench suite [--quick] [--runs N] [--json FILE]
    minikafka bench suite --against kafka     # the same scenarios on Apache Kafka 3.9 as well
    minikafka bench produce --acks all --records 100000 --value-size 100
    minikafka bench consume --topic bench-acks-all
    minikafka bench latency --rate 1000 --seconds 10 --client confluent
    minikafka bench scale --partitions 1000,5000 [--against kafka] [--json FILE]
    minikafka bench ab ../before ../after --rows kcat-acks1-rf1,send   # two checkouts, row by row

It creates its topic (RF 3 by default, min.insync.replicas=2) when missing and prints
one line of figures: records/s, MB/s and per-record latency percentiles.
"""
from __future__ import annotations

import argparse
import os
import time

from ..errors import ClientError, TopicAlreadyExistsError
from .common import add_dir_and_bootstrap, resolve_bootstrap


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    bench = subparsers.add_parser("bench", help="measure produce/consume throughput",
                                  description="Measure produce or consume throughput on a running cluster.")
    bsub = bench.add_subparsers(dest="bench_command", metavar="COMMAND", required=True, parser_class=type(bench))
    _add_produce_parser(bsub)
    _add_consume_parser(bsub)
    _add_latency_parser(bsub)
    _add_suite_parser(bsub)
    add_scale_parser(bsub)
    _add_ab_parser(bsub)


def _add_produce_parser(bsub: argparse._SubParsersAction) -> None:
    prod = bsub.add_parser("produce", help="produce N records and time it",
                           description="Send N records of one size with our Producer (send per record, the "
                                       "futures kept, as the suite's python row), wait for every "
                                       "acknowledgement and print records/s, MB/s and the p50, p99 and p99.9 "
                                       "latency from send to acknowledgement, timed at each batch's settling "
                                       "(no callback per record). The topic is created when missing "
                                       "(min.insync.replicas=2, or the replication factor when smaller).")
    prod.add_argument("--acks", choices=["all", "1", "0"], default="all",
                      help="acknowledgement from all in-sync replicas, the leader only, or none (default all)")
    prod.add_argument("--records", type=int, default=100_000, metavar="N", help="number of records (default 100000)")
    prod.add_argument("--value-size", dest="value_size", type=int, default=100, metavar="BYTES",
                      help="bytes per record value (default 100; no key)")
    prod.add_argument("--topic", default=None, help="default: bench-acks-<acks>")
    prod.add_argument("--partitions", type=int, default=3, metavar="N",
                      help="partitions of a topic it creates (default 3)")
    prod.add_argument("--replication-factor", dest="replication_factor", type=int, default=3, metavar="N",
                      help="replicas of each partition of a topic it creates (default 3)")
    prod.add_argument("--linger-ms", dest="linger_ms", type=int, default=5, metavar="MS",
                      help="milliseconds a batch may wait for more records (linger.ms, default 5)")
    prod.add_argument("--batch-size", dest="batch_size", type=int, default=65536, metavar="BYTES",
                      help="bytes per batch at most (batch.size, default 65536)")
    prod.add_argument("--compression-type", dest="compression_type", default="none",
                      choices=("none", "gzip", "snappy", "lz4", "zstd"), help="batch compression (default none)")
    prod.add_argument("--no-idempotence", dest="idempotence", action="store_false",
                      help="turn off the idempotent producer (on by default with --acks all)")
    prod.add_argument("--on-delivery", dest="on_delivery", action="store_true",
                      help="also pass a delivery callback per record (send(..., on_delivery=cb)), to see what one "
                           "costs; the latencies come from the batches' settling either way")
    add_dir_and_bootstrap(prod)
    prod.set_defaults(func=cmd_produce)


def _add_consume_parser(bsub: argparse._SubParsersAction) -> None:
    cons = bsub.add_parser("consume", help="read a topic from the beginning and time it",
                           description="Read every record of a topic from the beginning (up to the high "
                                       "watermarks at the start) with our Consumer and print records/s and "
                                       "MB/s; fill the topic first with `bench produce`.")
    cons.add_argument("--topic", required=True, help="the topic to read, e.g. bench-acks-all")
    cons.add_argument("--read", choices=["records", "batches", "values", "arrow"], default="records",
                      help="records: poll(), a ConsumerRecord each (default); batches: poll_batches(), nothing "
                           "decoded; values: poll_batches() and values(); arrow: poll_batches() and to_arrow()")
    add_dir_and_bootstrap(cons)
    cons.set_defaults(func=cmd_consume)


def _add_latency_parser(bsub: argparse._SubParsersAction) -> None:
    lat = bsub.add_parser("latency", help="acks=all latency at a fixed rate with linger 0 (a new topic)",
                          description="Send RATE records/s for SECONDS at acks=all with linger 0 to a new topic "
                                      "(3 partitions, RF 3, min.insync.replicas=2) and print the p50, p99 and "
                                      "p99.9 from send to acknowledgement and to a consumer's arrival.")
    lat.add_argument("--rate", type=int, default=1_000, metavar="N", help="records per second (default 1000)")
    lat.add_argument("--seconds", type=float, default=10, metavar="SECONDS",
                     help="how long to send, in seconds (default 10)")
    lat.add_argument("--value-size", dest="value_size", type=int, default=100, metavar="BYTES",
                     help="bytes per record value (default 100)")
    lat.add_argument("--client", choices=["python", "asyncio", "confluent"], default="python",
                     help="python: our blocking Producer and Consumer (msgpack listener); asyncio: our "
                          "AIOProducer and AIOConsumer on one event loop; confluent: confluent-kafka "
                          "(librdkafka) in a process of its own through the Kafka listener")
    lat.add_argument("--kafka-bootstrap-server", dest="kafka_bootstrap", metavar="HOST:PORT[,...]", default=None,
                     help="the Kafka listeners (default: those of the cluster in --dir)")
    add_dir_and_bootstrap(lat)
    lat.set_defaults(func=cmd_latency)


def _add_suite_parser(bsub: argparse._SubParsersAction) -> None:
    suite = bsub.add_parser("suite", help="every scenario, each run several times, one table with yardsticks",
                            description="Run every benchmark scenario (produce, consume, latency, failover, "
                                        "memory) several times on a cluster of its own and print one table "
                                        "of medians with min-max, each throughput next to the 'limit' and "
                                        "'mock' yardsticks measured in the same run (docs/performance.md). "
                                        "With --against kafka, six scenarios also run on Apache Kafka 3.9 after "
                                        "ours (never at once), beside ours with the ratio and the goals.")
    suite.add_argument("--quick", action="store_true", help="a tenth of the work (a check that all runs)")
    suite.add_argument("--runs", type=int, default=None, metavar="N", help="runs per scenario (default 3)")
    suite.add_argument("--json", dest="json_file", metavar="FILE", default=None, help="also write the figures as JSON")
    suite.add_argument("--bootstrap-server", dest="bootstrap_server", metavar="HOST:PORT[,HOST:PORT...]", default=None,
                       help="use this running cluster instead of starting one (failover and memory are skipped)")
    suite.add_argument("--dir", default=None, help="folder for the suite's own cluster (default: a temporary "
                                                   "one; removed at the end either way)")
    suite.add_argument("--kafka-bootstrap-server", dest="kafka_bootstrap", metavar="HOST:PORT[,...]", default=None,
                       help="its Kafka listeners, for the kcat rows")
    suite.add_argument("--against", choices=["kafka"], default=None,
                       help="also run the compared scenarios on Apache Kafka 3.9 (ZooKeeper mode, 3 brokers), after "
                            "ours and never at the same time: adds the 'Kafka 3.9', 'vs Kafka' and 'goal' columns")
    suite.add_argument("--reference-dir", dest="reference_dir", metavar="DIR", default=None,
                       help="with --against kafka: a reference cluster running in DIR (`minikafka reference up "
                            "--dir DIR`) is used and left running; otherwise one is started in DIR (default: a "
                            "temporary folder) and stopped and removed at the end")
    suite.add_argument("--only-compared", dest="only_compared", action="store_true",
                       help="with --against kafka: only the scenarios measured on both clusters")
    suite.set_defaults(func=cmd_suite)


def add_scale_parser(bsub: argparse._SubParsersAction) -> None:
    """``minikafka bench scale``: idle partitions' cost (:mod:`minikafka.bench.scale`)."""
    scale = bsub.add_parser("scale", help="cost of many idle partitions: creation, idle CPU, RSS, acks=all latency",
                            description="For each size, on a fresh cluster (stopped at the end): create topics "
                                        "until there are N partitions and time it until every partition has a "
                                        "leader, then the brokers' idle CPU in cores and RSS, the memory per "
                                        "partition replica, and acks=all latency (idempotent, linger 0) at "
                                        "--rate to one more topic. One table row per cluster and size.")
    scale.add_argument("--partitions", default="1000", metavar="N[,N...]",
                       help="idle partitions per run, one run per size (default 1000)")
    scale.add_argument("--brokers", type=int, default=3, metavar="N", help="brokers per cluster (default 3)")
    scale.add_argument("--rf", type=int, default=3, metavar="N", help="replication factor (default 3)")
    scale.add_argument("--per-topic", dest="per_topic", type=int, default=10, metavar="N",
                       help="partitions per topic (default 10)")
    scale.add_argument("--idle-seconds", dest="idle_seconds", type=float, default=30, metavar="SECONDS",
                       help="how long idle CPU is measured (default 30)")
    scale.add_argument("--rate", type=int, default=1000, metavar="N", help="records/s of the latency run (default 1000)")
    scale.add_argument("--produce-seconds", dest="produce_seconds", type=float, default=5, metavar="SECONDS",
                       help="how long the latency run sends (default 5)")
    scale.add_argument("--against", default=None, metavar="kafka",
                       help="also run every size on Apache Kafka 3.9 (minikafka reference), after ours, never at once")
    scale.add_argument("--kafka-heap", dest="kafka_heap", default="256m", metavar="SIZE",
                       help="with --against kafka: each Kafka broker's Java heap (default 256m; Kafka's own start "
                            "script uses 1g)")
    scale.add_argument("--failover", action="store_true",
                       help="also SIGKILL the controller and time until every partition it led has a new leader")
    scale.add_argument("--restart", action="store_true",
                       help="also restart a killed broker (the controller with --failover) and time until every ISR "
                            "is full, then stop every broker and start them all and time until every partition "
                            "has a leader (needs --storage disk)")
    scale.add_argument("--storage", default="memory", metavar="memory|disk",
                       help="minikafka's brokers' storage (default memory; Kafka's is always its disk)")
    scale.add_argument("--dir", default=None, help="folder for the clusters' folders (default: a temporary one, "
                                                   "removed at the end); with --bootstrap-server the running "
                                                   "cluster's folder (its broker pids)")
    scale.add_argument("--bootstrap-server", dest="bootstrap_server", metavar="HOST:PORT[,HOST:PORT...]", default=None,
                       help="measure this running minikafka cluster instead of starting one")
    scale.add_argument("--json", dest="json_file", metavar="FILE", default=None, help="also write the rows as JSON")
    scale.set_defaults(func=cmd_scale)


def _add_ab_parser(bsub: argparse._SubParsersAction) -> None:
    """``minikafka bench ab``: two checkouts side by side (:mod:`minikafka.bench.ab`)."""
    from ..bench.ab import ROWS
    ab = bsub.add_parser("ab", help="two checkouts of minikafka side by side, row by row",
                         description="Compare two checkouts of minikafka (folders holding the minikafka package, "
                                     "e.g. from `git worktree add DIR REV`), row by row, with the spread between "
                                     "clusters taken out: a kcat row runs on fresh clusters of each checkout in "
                                     "turn (A, B, B, A, ...), the first production of each not counted; a client "
                                     "row runs both checkouts' client code in turn, each in a process of its own, "
                                     "on one cluster of this tree. Prints medians, the change of B against A, "
                                     "and the CPU per record (the brokers' for kcat rows, the client's for the "
                                     "others). Run it on a quiet machine.")
    ab.add_argument("a", metavar="A", help="the first checkout's folder (before)")
    ab.add_argument("b", metavar="B", help="the second checkout's folder (after)")
    ab.add_argument("--rows", default=",".join(ROWS), metavar="ROW[,ROW...]",
                    help=f"the rows to compare (default all: {', '.join(ROWS)})")
    ab.add_argument("--clusters", type=int, default=4, metavar="N",
                    help="fresh clusters a side for each kcat row (default 4)")
    ab.add_argument("--rounds", type=int, default=4, metavar="N",
                    help="rounds of A, B, B, A for each client row (default 4: 8 samples a side)")
    ab.add_argument("--records", type=int, default=1_000_000, metavar="N",
                    help="records of 100 B per production or read (default 1000000)")
    ab.add_argument("--productions", type=int, default=4, metavar="N",
                    help="productions per cluster of a kcat row, the first not counted (default 4)")
    ab.add_argument("--dir", default=None, metavar="DIR",
                    help="make each cluster's folder in DIR and leave it there, stopped (default: temporary "
                         "folders, removed after each cluster)")
    ab.add_argument("--json", dest="json_file", metavar="FILE", default=None, help="also write the figures as JSON")
    ab.set_defaults(func=cmd_ab)


def cmd_ab(args: argparse.Namespace) -> int:
    """Run ``minikafka bench ab``: progress on stderr, the table on stdout."""
    import json
    import sys

    from ..bench import ab
    trees = (ab.checkout(args.a), ab.checkout(args.b))
    rows = ab.parse_rows(args.rows)
    for flag, value, least in (("--clusters", args.clusters, 1), ("--rounds", args.rounds, 1),
                               ("--records", args.records, 1000), ("--productions", args.productions, 2)):
        if value < least:
            raise ClientError(f"{flag} must be at least {least}")
    if args.dir:  # only once the input is known good: bad input makes nothing
        os.makedirs(args.dir, exist_ok=True)
    results = ab.run(trees, rows, clusters=args.clusters, rounds=args.rounds, records=args.records,
                     productions=args.productions, parent=os.path.abspath(args.dir) if args.dir else None,
                     say=lambda line: print(line, file=sys.stderr, flush=True))
    print(ab.table(results, ("A", "B")))
    if args.json_file:
        with open(args.json_file, "w") as f:
            json.dump({"a": trees[0], "b": trees[1], "rows": [r.as_dict() for r in results]}, f, indent=1)
    return 0


def scale_options(args: argparse.Namespace) -> "object":
    """The :class:`minikafka.bench.scale.ScaleOptions` of the parsed flags, validated (ClientError)."""
    from ..bench.scale import ScaleOptions, parse_sizes, validate
    opts = ScaleOptions(partitions=parse_sizes(args.partitions), brokers=args.brokers, rf=args.rf,
                        per_topic=args.per_topic, idle_seconds=args.idle_seconds, rate=args.rate,
                        produce_seconds=args.produce_seconds, against=args.against, dir=args.dir,
                        bootstrap=args.bootstrap_server, failover=args.failover,
                        restart=args.restart, storage=args.storage, kafka_heap=args.kafka_heap)
    validate(opts)
    return opts


def cmd_scale(args: argparse.Namespace) -> int:
    """Run ``minikafka bench scale``: progress on stderr, the table on stdout."""
    import signal
    import sys

    from ..bench import scale
    opts = scale_options(args)
    for sig in (signal.SIGINT, signal.SIGTERM):  # stop at the next step, the clusters stopped on the way out
        signal.signal(sig, scale.request_stop)
    print(scale.HEADER, flush=True)
    rows, notes = scale.run(opts, say=lambda line: print(line, file=sys.stderr, flush=True),
                            on_row=lambda row: print(scale.format_row(row), flush=True))
    for note in notes:
        print(note)
    if args.json_file:
        scale.write_json(args.json_file, rows, opts, notes)
    return 0


def cmd_suite(args: argparse.Namespace) -> int:
    import dataclasses
    import sys

    from ..bench.suite import FULL, QUICK, Suite, table, write_json
    sizes = QUICK if args.quick else FULL
    if args.runs is not None:
        if args.runs < 1:
            raise ClientError("--runs must be at least 1")
        sizes = dataclasses.replace(sizes, runs=args.runs)
    suite = Suite(sizes, args.bootstrap_server, args.kafka_bootstrap,
                  say=lambda line: print(line, file=sys.stderr, flush=True), cluster_dir=args.dir,
                  against=args.against, reference_dir=args.reference_dir, only_compared=args.only_compared)
    start = time.monotonic()
    rows = suite.run()
    print(table(rows, sizes.runs, suite.notes + [f"wall time {time.monotonic() - start:,.0f} s"]))
    if args.json_file:
        write_json(args.json_file, rows, sizes, suite.kafka, suite.notes)
    return 0


def cmd_latency(args: argparse.Namespace) -> int:
    from ..bench import scenarios as sc
    from ..cluster.state import load
    if args.rate < 1 or args.seconds <= 0:
        raise ClientError("--rate must be >= 1 and --seconds > 0")
    kafka = args.kafka_bootstrap
    if kafka is None and args.client == "confluent" and not args.bootstrap_server:
        state = load(args.dir)
        kafka = ",".join(f"{b.host}:{b.kafka_port}" for _, b in sorted(state.brokers.items()) if b.kafka_port) or None
    target = sc.Target(resolve_bootstrap(args), kafka)
    topic = f"bench-latency-{os.getpid()}-{time.time_ns() % 10**9}"
    sc.create_topic(target, topic, 3, 3, 2)
    fn = {"python": sc.acks_latency_python, "asyncio": sc.acks_latency_asyncio}.get(args.client, sc.acks_latency_rdkafka)
    out = sc.with_broker_pauses(target, lambda: fn(target, topic, args.rate, args.seconds, args.value_size))
    if out is None:
        raise ClientError(sc.NEEDS_CONFLUENT)
    print(f"latency client={args.client} acks=all linger_ms=0 rate={args.rate}/s records={out['records']} "
          f"ack_ms p50={out['p50_ms']:.1f} p99={out['p99_ms']:.1f} p99.9={out['p999_ms']:.1f} "
          f"end_to_end_ms p50={out['e2e_p50_ms']:.1f} p99={out['e2e_p99_ms']:.1f} p99.9={out['e2e_p999_ms']:.1f} "
          f"brokers loop_lag_ms p99<={out['loop_lag_p99_ms']:g} max<={out['loop_lag_max_ms']:g} "
          f"stalls={out['loop_stalls']:.0f} gc_pause_ms={out['gc_pause_ms']:.1f}")
    return 0


def cmd_produce(args: argparse.Namespace) -> int:
    from .. import Admin, Producer
    from ..bench.figures import percentile
    from ..bench.scenarios import DeliveryCount
    if args.records < 1 or args.value_size < 0:
        raise ClientError("--records must be >= 1 and --value-size >= 0")
    bootstrap = resolve_bootstrap(args)
    topic = args.topic or f"bench-acks-{args.acks}"
    with Admin(bootstrap) as admin:
        try:
            admin.create_topic(topic, args.partitions, args.replication_factor,
                               config={"min.insync.replicas": str(min(2, args.replication_factor))})
        except TopicAlreadyExistsError:
            pass
    value = os.urandom(args.value_size // 2 + 1).hex()[: args.value_size].encode()
    acks = "all" if args.acks == "all" else int(args.acks)
    idempotent = args.idempotence and acks == "all"
    count = DeliveryCount() if args.on_delivery else None
    clock = time.perf_counter
    sent_at: list[float] = []
    stamp = sent_at.append
    with Producer(bootstrap, acks=acks, linger_ms=args.linger_ms, batch_size=args.batch_size,
                  compression_type=args.compression_type, enable_idempotence=idempotent) as producer:
        send = producer.send
        futures = []
        keep = futures.append
        start = clock()
        # One clock read per record when it is sent; its batch's settling stamps the
        # acknowledgement (RecordFuture.settled_at, one clock read per batch): no callback
        # per record unless --on-delivery asks for one.
        if count is None:
            for _ in range(args.records):
                stamp(clock())
                keep(send(topic, value))
        else:
            for _ in range(args.records):
                stamp(clock())
                keep(send(topic, value, on_delivery=count))
        producer.flush()
        elapsed = clock() - start
    failed = sum(1 for f in futures if f.exception(0) is not None)
    latencies = sorted(f.settled_at - t for f, t in zip(futures, sent_at) if f.exception(0) is None)

    def pct(q: float) -> float:
        return percentile(latencies, q) * 1000 if latencies else float("nan")
    mb = args.records * args.value_size / 1e6
    print(f"produce acks={args.acks} idempotence={'on' if idempotent else 'off'} "
          f"compression={args.compression_type} on_delivery={'on' if count is not None else 'off'} topic={topic} "
          f"records={args.records} value_size={args.value_size} failed={failed} "
          f"elapsed_s={elapsed:.2f} records_per_s={args.records / elapsed:,.0f} MB_per_s={mb / elapsed:.2f} "
          f"latency_ms_p50={pct(0.5):.1f} p99={pct(0.99):.1f} p99.9={pct(0.999):.1f}")
    return 0 if not failed else 1


def cmd_consume(args: argparse.Namespace) -> int:
    from ..bench.scenarios import Target, consume_python
    out = consume_python(Target(resolve_bootstrap(args)), args.topic, args.read)
    print(f"consume read={args.read} topic={args.topic} records={out['records']} elapsed_s={out['elapsed_s']:.2f} "
          f"records_per_s={out['records_per_s']:,.0f} MB_per_s={out['mb_per_s']:.2f}")
    return 0
