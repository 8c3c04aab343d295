"""The command line of the live fault suite (``scripts/chaos.py``): kill, pause and stop
brokers under load, then check that no acknowledged record was lost (see
:mod:`minikafka.chaos`).

Prints one summary line on stdout::

    acked=… lost=… duplicated=… faults=… leader_elections=… unclean=… longest_unavailable_ms=… ok=true|false

and exits 0 when nothing acknowledged was lost and every check passed, 1 otherwise, 2
when ``--link-faults`` cannot be had.  With ``--verbose`` the faults are printed on
stderr as they happen; when a check fails the details (faults, lost records, diverging
replicas) go to stderr and the cluster folder is kept.
"""
from __future__ import annotations

import argparse
import sys

from .links import unavailable as links_unavailable
from .runner import SCENARIOS, TRUNCATIONS, ChaosOptions, run

DESCRIPTION = ("Fault-injection suite: kill, pause and stop brokers under load, then check that no "
               "acknowledged record was lost (see minikafka/chaos/).")


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run, print the line; the exit status."""
    parser = argparse.ArgumentParser(prog="chaos.py", description=DESCRIPTION)
    parser.add_argument("--faults", type=int, default=None, help="number of faults to inject (default 10 "
                                                                 "when --duration is not given either)")
    parser.add_argument("--duration", type=float, default=None, help="seconds of fault injection")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault schedule (default 0)")
    parser.add_argument("--dir", default=None, help="use (or start) the cluster in this folder "
                                                    "(default: a new cluster in a temporary folder)")
    parser.add_argument("--storage", choices=("memory", "disk"), default="disk", help="broker log storage (default disk)")
    parser.add_argument("--truncation", choices=TRUNCATIONS, default="leader_epoch",
                        help="replication.truncation of the brokers (default leader_epoch)")
    parser.add_argument("--scenario", choices=SCENARIOS, default="random",
                        help="random faults (default), kip101: only follower-then-leader controlled shutdowns, "
                             "or zookeeper: only ZooKeeper server kills (needs --zookeeper-nodes 3)")
    parser.add_argument("--partitions", type=int, default=3, help="partitions of the test topic (default 3)")
    parser.add_argument("--producers", type=int, default=2, help="producer threads (default 2)")
    parser.add_argument("--consumers", type=int, default=1, help="consumer threads (default 1)")
    parser.add_argument("--rate", type=float, default=150.0, help="records per second per producer, or per copier "
                                                                   "with --transactions (default 150)")
    parser.add_argument("--interval", type=float, nargs=2, default=(2.0, 5.0), metavar=("MIN", "MAX"),
                        help="seconds between faults, drawn uniformly (default 2 5)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary cluster folder even when ok")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra broker setting for a cluster started here (repeatable)")
    parser.add_argument("--no-idempotence", dest="idempotence", action="store_false",
                        help="non-idempotent producers: duplicates from retries are then allowed")
    parser.add_argument("--transactions", type=int, default=0, metavar="N",
                        help="run the transactional consume-transform-produce workload instead of the producers "
                             "and consumers: N input records per partition, copied exactly once by --copiers "
                             "transactional copiers (checks read_committed, all-or-nothing and offsets)")
    parser.add_argument("--copiers", type=int, default=2, help="transactional copiers (default 2)")
    links = parser.add_mutually_exclusive_group()
    links.add_argument("--link-faults", dest="link_faults", action="store_true", default=None,
                       help="also cut links with iptables (needs root; default: on when running as root)")
    links.add_argument("--no-link-faults", dest="link_faults", action="store_false",
                       help="no link faults, even as root")
    parser.add_argument("--zookeeper-nodes", type=int, default=1, metavar="N",
                        help="ZooKeeper servers of the cluster started here (default 1); with an ensemble (3) "
                             "ZooKeeper servers are killed and restarted too, one or a majority at a time")
    parser.add_argument("-v", "--verbose", action="store_true", help="print faults and progress on stderr")
    args = parser.parse_args(argv)

    configs = {}
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--config expects KEY=VALUE, got {item!r}")
        configs[key.strip()] = value.strip()

    def log(line: str) -> None:
        if args.verbose:
            print(line, file=sys.stderr, flush=True)

    if args.link_faults:
        reason = links_unavailable()
        if reason:
            print(f"chaos.py: {reason}", file=sys.stderr)
            return 2
    summary = run(ChaosOptions(
        dir=args.dir, storage=args.storage, truncation=args.truncation, seed=args.seed, faults=args.faults,
        duration=args.duration, partitions=args.partitions, producers=args.producers, consumers=args.consumers,
        rate=args.rate, scenario=args.scenario, interval_s=tuple(args.interval), keep=args.keep,
        broker_configs=configs, idempotence=args.idempotence, link_faults=args.link_faults,
        transactions=args.transactions, copiers=args.copiers, zookeeper_nodes=args.zookeeper_nodes), log=log)
    print(summary.line(), flush=True)
    if not summary.ok or args.verbose:
        print(summary.details(), file=sys.stderr, flush=True)
    return 0 if summary.ok else 1
