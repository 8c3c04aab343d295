"""The broker process's garbage collector: each pause timed per generation, start-up objects frozen."""
from __future__ import annotations

import gc

from minikafka import metric_names as M
from minikafka.broker import gc_pauses
from minikafka.broker.metrics import Metrics


def _counts(metrics: Metrics) -> dict[str, int]:
    return {labels[0]: sum(buckets) for labels, buckets, _ in metrics.histogram_samples(M.GC_PAUSE_SECONDS)}


def test_each_collection_is_one_observation_of_its_generation_until_uninstalled():
    metrics = Metrics()
    pauses = gc_pauses.GcPauses(metrics)
    pauses.install()
    try:
        gc.collect(0)
        gc.collect(2)
        gc.collect(2)
    finally:
        pauses.uninstall()
    counts = _counts(metrics)
    assert counts.get("2", 0) >= 2 and counts.get("0", 0) >= 1
    gc.collect()
    assert _counts(metrics) == counts  # no longer listening


def test_settle_freezes_what_is_alive_so_a_full_collection_walks_only_later_objects():
    before = gc.get_freeze_count()
    try:
        gc_pauses.settle()
        assert gc.get_freeze_count() > before
        assert gc.get_threshold()[0] == 700  # CPython's: larger young generations paused longer
    finally:
        gc.unfreeze()
