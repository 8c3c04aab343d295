"""``minikafka scenario NAME``: replay a replication anomaly step by step (no cluster needed).

    minikafka scenario kip101-loss --truncation high_watermark
    minikafka scenario kip101-divergence --truncation both
"""
from __future__ import annotations

import argparse

from ..replication.partition import TruncationMode
from ..replication.scenarios import SCENARIOS


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "scenario", help="replay the KIP-101 anomalies step by step on the replication core",
        description="Replay a replication scenario on minikafka's replica state machine (the same code the "
                    "brokers run), printing every replica's LEO, HW, epochs and records after each step.")
    p.add_argument("name", choices=sorted(SCENARIOS), help="which scenario")
    p.add_argument("--truncation", choices=["leader_epoch", "high_watermark", "both"], default="both",
                   help="the follower truncation rule (default: both, one after the other)")
    p.set_defaults(func=cmd_scenario)


def cmd_scenario(args: argparse.Namespace) -> int:
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
