"""``minikafka reference``: Apache Kafka 3.9 in ZooKeeper mode beside minikafka, as the reference.

    minikafka reference up                 # ZooKeeper and 3 Kafka 3.9 brokers on free ports
    minikafka reference status [--json]    # their pids and the bootstrap servers
    minikafka reference kill 2             # SIGKILL one Kafka broker
    minikafka reference start 2            # start it again, with its data
    minikafka reference down               # stop them all by pid
    minikafka reference fuzz --seeds 1..5 --ops 100   # the differential fuzzer (docs/fidelity.md)
    minikafka reference fuzz --replay repro.json       # one reproduction on both clusters
"""
from __future__ import annotations

import argparse
import json

from .client_commands import parse_configs
from .common import broker_id


def _dir(parser: argparse.ArgumentParser) -> None:
    from ..reference.cluster import DEFAULT_DIR
    parser.add_argument("--dir", default=DEFAULT_DIR, help=f"folder of the reference cluster (default {DEFAULT_DIR})")


def cmd_up(args: argparse.Namespace) -> int:
    from ..reference import cluster

    state = cluster.up(args.dir, brokers=args.brokers, configs=parse_configs(args.config),
                       timeout_s=args.timeout, progress=lambda m: print(m, flush=True), heap=args.heap)
    print(f"Apache Kafka {state.version}: bootstrap.servers={state.bootstrap}")
    print(f"ZooKeeper: {state.zookeeper_connect}   logs: {args.dir}/kafka-*.log")
    print(f"stop it with: minikafka reference down --dir {args.dir}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from ..reference import cluster

    st = cluster.status(args.dir)
    if args.json:
        print(json.dumps(st, indent=2))
        return 0
    print(f"Apache Kafka {st['version']}  bootstrap.servers={st['bootstrap']}")
    zk = st["zookeeper"]
    print(f"zookeeper  {zk['connect']}  pid {zk['pid']}  {zk['state']}")
    for b in st["brokers"]:
        print(f"kafka-{b['id']}    127.0.0.1:{b['port']}  pid {b['pid']}  {b['state']}")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    from ..reference import cluster

    for name, outcome in cluster.down(args.dir).items():
        print(f"{name}: {outcome}")
    return 0


def cmd_kill(args: argparse.Namespace) -> int:
    from ..reference import cluster

    cluster.kill(args.dir, args.broker_id)
    print(f"killed Kafka broker {args.broker_id}")
    return 0


def cmd_start(args: argparse.Namespace) -> int:
    from ..reference import cluster

    cluster.start(args.dir, args.broker_id)
    print(f"started Kafka broker {args.broker_id}")
    return 0


def cmd_fuzz(args: argparse.Namespace) -> int:
    from ..errors import ClientError
    from ..reference import fuzz

    if (args.seeds is None) == (args.replay is None):
        raise ClientError("give --seeds (e.g. 1..20) or --replay FILE")
    if args.ops < 1:
        raise ClientError(f"--ops must be at least 1, not {args.ops}")
    try:
        seeds = fuzz.parse_seeds(args.seeds) if args.seeds is not None else None
        if args.replay is not None:
            fuzz.load_replay(args.replay)
    except ValueError as exc:
        raise ClientError(str(exc) if args.replay else f"--seeds {args.seeds}: give N, N..M or N,M,...") from None
    if args.jobs < 1:
        raise ClientError(f"--jobs must be at least 1, not {args.jobs}")
    return fuzz.main_run(seeds, args.ops, args.replay, args.repro_dir, shrink=not args.no_shrink,
                         faults=not args.no_faults, jobs=args.jobs)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    ref = sub.add_parser("reference", help="run Apache Kafka 3.9 (ZooKeeper mode) beside minikafka, as the reference",
                         description="A real Apache Kafka 3.9 cluster in ZooKeeper mode on this machine: its own "
                                     "ZooKeeper and N brokers (256 MB heaps) on free ports of 127.0.0.1. The jars "
                                     "come from Maven Central into ~/.cache/minikafka/jars (scripts/kafka-jars.sh "
                                     "3.9, or MINIKAFKA_KAFKA_3_9_JARS=DIR). Used to compare minikafka with Kafka "
                                     "(docs/fidelity.md) and to benchmark both side by side.")
    rsub = ref.add_subparsers(dest="reference_command", metavar="SUBCOMMAND", required=True,
                              parser_class=type(ref))
    _add_cluster_parsers(rsub)
    _add_fuzz_parser(rsub)


def _add_cluster_parsers(rsub: argparse._SubParsersAction) -> None:
    """``reference up|status|down|kill|start``."""
    up = rsub.add_parser("up", help="start ZooKeeper and N Kafka 3.9 brokers",
                         description="Start a ZooKeeper and N Apache Kafka 3.9 brokers in ZooKeeper mode on free "
                                     "ports of 127.0.0.1 (the folder is emptied first), and wait until every "
                                     "broker is registered and a controller is elected.")
    _dir(up)
    up.add_argument("--brokers", type=int, default=3, help="number of Kafka brokers (default 3)")
    up.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for them (default 120)")
    up.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting for every broker's server.properties (repeatable)")
    up.add_argument("--heap", default="256m", metavar="SIZE",
                    help="each broker's Java heap, -Xmx and -Xms (default 256m; Kafka's own start script uses 1g)")
    up.set_defaults(func=cmd_up)
    status = rsub.add_parser("status", help="show the reference cluster's processes",
                             description="The Kafka version, bootstrap servers, and each process's pid and state "
                                         "(running, stopped, dead).")
    _dir(status)
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.set_defaults(func=cmd_status)
    down = rsub.add_parser("down", help="stop the brokers (controlled shutdown) and ZooKeeper by pid",
                           description="SIGTERM each Kafka broker (a controlled shutdown; SIGKILL after 30 s), "
                                       "then ZooKeeper, by the pids recorded in reference.json. Logs are kept.")
    _dir(down)
    down.set_defaults(func=cmd_down)
    kill = rsub.add_parser("kill", help="SIGKILL one Kafka broker",
                           description="Crash one Kafka broker with SIGKILL; `reference start ID` brings it back.")
    _dir(kill)
    kill.add_argument("broker_id", type=broker_id, metavar="ID", help="the broker id, e.g. 2")
    kill.set_defaults(func=cmd_kill)
    start = rsub.add_parser("start", help="start a killed or stopped Kafka broker again",
                            description="Start a killed or stopped Kafka broker again with its server.properties "
                                        "and data (its log is appended to); it registers on its own.")
    _dir(start)
    start.add_argument("broker_id", type=broker_id, metavar="ID", help="the broker id, e.g. 2")
    start.set_defaults(func=cmd_start)


def _add_fuzz_parser(rsub: argparse._SubParsersAction) -> None:
    fuzz = rsub.add_parser("fuzz", help="the differential fuzzer: the same random requests on minikafka and Kafka 3.9",
                           description="Start a fresh 3-broker minikafka cluster and a fresh 3-broker Apache Kafka "
                                       "3.9 cluster, run a seeded sequence of Kafka requests per seed on each (one "
                                       "after the other) through confluent-kafka and hand-built requests, and "
                                       "compare every answer and the end state (records, offsets, committed "
                                       "offsets, znodes). About one operation in 60 is a fault step: a "
                                       "partition's leader or follower, the controller, or a group's or "
                                       "transactional id's coordinator gets SIGKILL, SIGTERM or SIGSTOP on both "
                                       "clusters, and is brought back once the others have moved on without it "
                                       "(seconds each). A difference not in the allow-list "
                                       "(minikafka/reference/fuzz_compare.py) is shrunk to a short sequence and "
                                       "printed as a reproduction for --replay. Exit 1 if any is unexplained.")
    fuzz.add_argument("--seeds", metavar="N..M", help="the seeds: N, N..M or N,M,...")
    fuzz.add_argument("--ops", type=int, default=100, help="operations per seed (default 100)")
    fuzz.add_argument("--replay", metavar="FILE", help="run one reproduction (JSON with an `ops` list) instead")
    fuzz.add_argument("--repro-dir", metavar="DIR", help="write each reproduction to DIR/repro-seed-N.json "
                                                         "rather than printing it")
    fuzz.add_argument("--no-shrink", action="store_true", help="report differences without shrinking")
    fuzz.add_argument("--no-faults", action="store_true",
                      help="no fault steps: the same seeds' other operations only (faster)")
    fuzz.add_argument("--jobs", type=int, default=1, metavar="N",
                      help="N pairs of clusters, each fuzzing its share of the seeds at once (default 1)")
    fuzz.set_defaults(func=cmd_fuzz)
