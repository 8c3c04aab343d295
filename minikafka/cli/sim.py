"""``minikafka sim``: the deterministic simulation of the whole cluster (docs/simulation.md).

    minikafka sim --seed 7                       # one seed: a one-line verdict (run twice: determinism)
    minikafka sim --seed 7 --trace               # ... with its event trace
    minikafka sim --seeds 1..1000 --jobs 2       # a sweep: one line per failing seed, then seeds=N failed=F
    minikafka sim --seeds 1..50 --truncation high_watermark   # finds the KIP-101 loss
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import sys
import time
from dataclasses import replace

from ..errors import ClientError

MAX_BROKERS = 9


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    from ..sim.nemesis import KINDS

    p = subparsers.add_parser(
        "sim", help="simulate the whole cluster deterministically under a seed (faults, invariants, replay)",
        description="Run the real broker code (replica manager, fetchers, controller) on simulated time, network, "
                    "ZooKeeper and disk under a seed: a nemesis injects faults, invariants are checked after "
                    "every step, and a seed replays identically.  Exit status 1 when an invariant is violated.")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--seed", type=int, help="simulate one seed (it runs twice to check that it replays identically)")
    which.add_argument("--seeds", metavar="A..B", help="sweep the seeds A to B (inclusive)")
    p.add_argument("--brokers", type=int, default=3, help=f"number of brokers, 1-{MAX_BROKERS} (default 3)")
    p.add_argument("--steps", type=int, default=40, help="nemesis steps, one fault or none every 2 virtual s (default 40)")
    p.add_argument("--truncation", choices=["leader_epoch", "high_watermark"], default="leader_epoch",
                   help="the follower truncation rule, replication.truncation (default leader_epoch)")
    p.add_argument("--storage", choices=["disk", "memory"], default="disk", help="broker storage (default disk)")
    p.add_argument("--partitions", type=int, default=2, help="partitions of the simulated topic (default 2)")
    p.add_argument("--faults", metavar="KIND,...",
                   help=f"fault kinds to draw from (default: all but power-loss, zk-server-kill and zk-outage): {', '.join(KINDS)}")
    p.add_argument("--transactions", action="store_true",
                   help="run the transactional consume-transform-produce workload (exactly-once copiers) instead of "
                        "the plain producers and consumer, and check the transactional invariants")
    p.add_argument("--trace", action="store_true", help="print the event trace (always printed for a failing --seed)")
    p.add_argument("--jobs", type=int, default=1, help="--seeds: simulate this many seeds at once (processes)")
    p.set_defaults(func=cmd_sim)


def _options(args: argparse.Namespace) -> "object":
    from ..sim.nemesis import KINDS
    from ..sim.world import Options

    if not 1 <= args.brokers <= MAX_BROKERS:
        raise ClientError(f"--brokers must be 1 to {MAX_BROKERS}, not {args.brokers}")
    if args.steps < 0:
        raise ClientError(f"--steps must be 0 or more, not {args.steps}")
    if not 1 <= args.partitions <= 50:
        raise ClientError(f"--partitions must be 1 to 50, not {args.partitions}")
    if args.jobs < 1:
        raise ClientError(f"--jobs must be 1 or more, not {args.jobs}")
    faults: tuple[str, ...] = ()
    if args.faults:
        faults = tuple(f.strip() for f in args.faults.split(",") if f.strip())
        unknown = [f for f in faults if f not in KINDS]
        if unknown or not faults:
            raise ClientError(f"--faults: unknown fault kind {unknown[0] if unknown else args.faults!r} "
                              f"(choose from {', '.join(KINDS)})")
        if "power-loss" in faults and args.storage == "memory":
            raise ClientError("--faults power-loss needs --storage disk (memory storage loses everything on any crash)")
    rf = min(3, args.brokers)
    return Options(seed=args.seed if args.seed is not None else 0, brokers=args.brokers, storage=args.storage,
                   truncation=args.truncation, partitions=args.partitions, replication_factor=rf,
                   min_insync_replicas=min(2, rf), steps=args.steps, faults=faults,
                   transactions=args.transactions)


def _seed_range(text: str) -> range:
    a, sep, b = text.partition("..")
    try:
        lo, hi = int(a), int(b)
    except ValueError:
        raise ClientError(f"--seeds must look like A..B (for example 1..1000), not {text!r}") from None
    if not sep or hi < lo:
        raise ClientError(f"--seeds must look like A..B with A <= B, not {text!r}")
    return range(lo, hi + 1)


def _run(opts: "object") -> "object":
    from ..sim.runner import run_seed
    return run_seed(opts)


def _pin_string_hashing() -> None:
    """Run again with PYTHONHASHSEED=0 unless it is set so: the brokers iterate sets of
    topic names, whose order follows the per-process string hash, so a seed replays
    identically in another process only with the hash seed pinned."""
    if os.environ.get("PYTHONHASHSEED") != "0" and sys.argv[1:2] == ["sim"]:
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable, "-m", "minikafka", *sys.argv[1:]],
                  {**os.environ, "PYTHONHASHSEED": "0"})


def cmd_sim(args: argparse.Namespace) -> int:
    from ..sim.runner import check_determinism

    opts = _options(args)
    _pin_string_hashing()
    if args.seed is not None:
        same, result, _ = check_determinism(opts)
        if args.trace or not result.ok:
            for line in result.trace:
                print(line)
            for v in result.violations:
                print(f"violation: {v}")
        print(result.line(opts) + f" deterministic={'yes' if same else 'NO'}")
        return 0 if result.ok and same else 1
    seeds = _seed_range(args.seeds)
    started = time.monotonic()
    failed = faults = acked = 0
    # as each seed ends, not in seed order: one slow seed must not hide the others
    for result in _results(args.jobs, [replace(opts, seed=s) for s in seeds]):
        faults += result.faults
        acked += result.acked
        if not result.ok:
            failed += 1
            print(result.line(replace(opts, seed=result.seed)), flush=True)
    print(f"seeds={len(seeds)} failed={failed} truncation={opts.truncation} storage={opts.storage} "
          f"faults={faults} acked={acked} wall_s={time.monotonic() - started:.0f}")
    return 0 if failed == 0 else 1


def _results(jobs: int, options: list) -> "object":
    """Each seed's result as it ends (in seed order with one job)."""
    if jobs == 1:
        yield from map(_run, options)
        return
    with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
        for fut in concurrent.futures.as_completed([pool.submit(_run, o) for o in options]):
            yield fut.result()
