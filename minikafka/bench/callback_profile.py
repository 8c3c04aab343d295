"""What a callback per record costs our blocking Producer (docs/performance.md, "A delivery
callback per record").

    python -m minikafka.bench.callback_profile objects
    python -m minikafka.bench.callback_profile rounds --bootstrap-server HOST:PORT[,...] [--rounds 8]

``objects``: one thread, no cluster: 200,000 ``RecordFuture``s made and kept, then settled
600 at a time, with each way of attaching a callback; CPU per record (``thread_time``, the
best of 7) and the garbage collector's passes, with the collector on and off.

``rounds``: on a running cluster, ``send`` per record with the futures kept (acks=all, a
fresh RF 3 topic and producer per round), without a callback, with ``on_delivery``, with
``add_done_callback`` of one function and of a closure per record, the order alternating
each round; records/s, each round's ratio to the plain loop, each thread's CPU per record
and the collector's time.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any, Callable

from ..client.futures import Completion, RecordFuture, resolve_batch
from ..client.sync import Admin, Producer

RECORDS = 200_000
MODES = ("plain", "on_delivery", "shared", "closure")


def _attach(mode: str, lat: list) -> Callable[[Any], Any]:
    """How a record gets its callback in ``mode``: a function of its future."""
    shared = lat.append
    if mode == "shared":
        return lambda f: f.add_done_callback(shared)
    if mode == "closure":
        def closure(f: Any) -> None:
            t = time.perf_counter()
            f.add_done_callback(lambda fut, t=t: lat.append(t))
        return closure
    return lambda f: None


def _objects_once(mode: str) -> tuple[float, list[int]]:
    c = Completion()
    lat: list = []
    attach = _attach(mode, lat)
    on_delivery = (lambda m, e: None) if mode == "on_delivery" else None
    before = [s["collections"] for s in gc.get_stats()]
    start = time.thread_time_ns()
    futures = []
    for _ in range(RECORDS):
        f = RecordFuture(c, 0, "t", b"x", None, None, (), 0, on_delivery)
        attach(f)
        futures.append(f)
    for i in range(0, RECORDS, 600):
        resolve_batch(futures[i:i + 600], "t", 0, i)
    ns = (time.thread_time_ns() - start) / RECORDS
    return ns, [s["collections"] - b for s, b in zip(gc.get_stats(), before)]


def objects() -> None:
    for collector in (True, False):
        for mode in MODES:
            runs = []
            for _ in range(7):
                gc.collect()
                if not collector:
                    gc.disable()
                try:
                    runs.append(_objects_once(mode))
                finally:
                    gc.enable()
            ns, passes = min(runs)
            print(f"collector {'on ' if collector else 'off'} {mode:12s} {ns:6.0f} ns per record, "
                  f"passes young/middle/full {'/'.join(map(str, passes))}")


def _round(bootstrap: str, mode: str, seq: int) -> dict:
    topic = f"callback-profile-{time.time_ns()}-{seq}"
    with Admin(bootstrap) as admin:
        admin.create_topic(topic, 3, 3, config={"min.insync.replicas": "2"})
    lat: list = []
    attach = _attach(mode, lat)
    collector = [0.0, 0.0]

    def timed(phase: str, info: dict) -> None:
        if phase == "start":
            collector[1] = time.perf_counter()
        else:
            collector[0] += time.perf_counter() - collector[1]

    with Producer(bootstrap, acks="all") as p:
        send = p.send
        loop_clock = time.pthread_getcpuclockid(p._lt._thread.ident)  # type: ignore[arg-type]
        gc.callbacks.append(timed)
        try:
            loop0, main0, start = time.clock_gettime(loop_clock), time.thread_time(), time.perf_counter()
            if mode == "on_delivery":
                count = lat.append

                def delivered(metadata: Any, error: BaseException | None) -> None:  # one function for all
                    count(1)
                futures = [send(topic, b"x" * 100, on_delivery=delivered) for _ in range(RECORDS)]
            else:
                futures = []
                for _ in range(RECORDS):
                    f = send(topic, b"x" * 100)
                    attach(f)
                    futures.append(f)
            main = time.thread_time() - main0
            p.flush()
            wall, loop = time.perf_counter() - start, time.clock_gettime(loop_clock) - loop0
        finally:
            gc.callbacks.remove(timed)
    return {"records_per_s": RECORDS / wall, "main_us": main / RECORDS * 1e6, "loop_us": loop / RECORDS * 1e6,
            "collector_ms": collector[0] * 1000}


def rounds(bootstrap: str, count: int) -> None:
    results: dict[str, list[dict]] = {m: [] for m in MODES}
    for r in range(count):
        for mode in MODES if r % 2 == 0 else MODES[::-1]:
            out = results[mode]
            out.append(_round(bootstrap, mode, r))
            print(f"round {r + 1} {mode}: " + ", ".join(f"{k} {v:,.2f}" for k, v in out[-1].items()), flush=True)
    for mode, runs in results.items():
        ratios = [a["records_per_s"] / b["records_per_s"] for a, b in zip(runs, results["plain"])]
        medians = ", ".join(f"{k} {statistics.median(r[k] for r in runs):,.2f}" for k in runs[0])
        print(f"{mode}: {medians}; over plain per round {statistics.median(ratios):.3f} "
              f"({min(ratios):.3f}-{max(ratios):.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["objects", "rounds"])
    parser.add_argument("--bootstrap-server", dest="bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    if args.what == "objects":
        objects()
    else:
        rounds(args.bootstrap, args.rounds)


if __name__ == "__main__":
    main()
