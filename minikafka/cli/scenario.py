"""``minikafka scenario NAME``: replay a replication anomaly step by step (no cluster needed);
``minikafka scenario --live NAME``: play one on live processes (root: link faults).

    minikafka scenario kip101-loss --truncation high_watermark
    minikafka scenario kip101-divergence --truncation both
    minikafka scenario --live kip101-loss --truncation high_watermark
    minikafka scenario --live kip320-zombie --truncation leader_epoch

A replay exits 0.  A live run exits 0 when every run it made went to the end (the
``=>`` line of each says PASS or ANOMALY), 1 when one could not be carried out
(INCOMPLETE), 2 on bad input or when link faults cannot run here (not root, no
iptables, no cgroup v2).
"""
from __future__ import annotations

import argparse
import sys

from ..errors import ClientError
from ..replication.partition import TruncationMode
from ..sim.scenarios import SCENARIOS


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    from ..chaos.live import SCENARIOS as LIVE

    names = ", ".join(sorted(SCENARIOS))
    live = ", ".join(sorted(LIVE))
    p = subparsers.add_parser(
        "scenario", help="replay the KIP-101 anomalies step by step, or play them on live processes",
        description="Replay a replication scenario on minikafka's replica state machine (the same code the "
                    "brokers run), printing every replica's LEO, HW, epochs and records after each step; "
                    "with --live, play a scenario on a cluster of its own (real ZooKeeper and broker "
                    "processes, faults by iptables link cuts, kills and controller-made leader changes; "
                    "needs root).")
    p.add_argument("name", help=f"which scenario: {names}; with --live: {live}")
    p.add_argument("--live", action="store_true", help="play it on live processes (root)")
    p.add_argument("--truncation", choices=["leader_epoch", "high_watermark", "both"], default="both",
                   help="the follower truncation rule, replication.truncation (default: both, one after the other)")
    p.add_argument("--keep", action="store_true", help="--live: keep the cluster folder (logs, segment files)")
    p.set_defaults(func=cmd_scenario)


def cmd_scenario(args: argparse.Namespace) -> int:
    if args.live:
        return _live(args)
    if args.name not in SCENARIOS:
        hint = " (a live one? add --live)" if _is_live(args.name) else ""
        raise ClientError(f"argument name: invalid choice: {args.name!r} (choose from "
                          f"{', '.join(sorted(SCENARIOS))}){hint}")
    modes = list(TruncationMode) if args.truncation == "both" else [TruncationMode(args.truncation)]
    for i, mode in enumerate(modes):
        if i:
            print()
        n = SCENARIOS[args.name](mode)
        print(f"== {args.name} with replication.truncation={mode.value}")
        for line in n.lines:
            print(line)
        print(f"=> {n.verdict}")
    return 0


def _is_live(name: str) -> bool:
    from ..chaos.live import SCENARIOS as LIVE
    return name in LIVE


def _live(args: argparse.Namespace) -> int:
    from ..chaos import live
    from ..chaos.links import unavailable

    if args.name not in live.SCENARIOS:
        raise ClientError(f"argument name: invalid live scenario {args.name!r} (choose from "
                          f"{', '.join(sorted(live.SCENARIOS))})")
    reason = unavailable()
    if reason:
        raise ClientError(reason)
    modes = list(live.TRUNCATIONS) if args.truncation == "both" else [args.truncation]
    status = 0
    for i, mode in enumerate(modes):
        if i:
            print()
        print(f"== {args.name} (live) with replication.truncation={mode}: {live.SCENARIOS[args.name][2]}", flush=True)
        result = live.run(args.name, mode, say=lambda line: print(line, flush=True), keep=args.keep)
        print(f"=> {result.verdict} ({result.elapsed_s:.1f}s)", flush=True)
        if result.dir:
            print(f"   cluster folder: {result.dir}", file=sys.stderr, flush=True)
        if not result.completed:
            status = 1
    return status
