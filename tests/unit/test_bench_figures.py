"""The latency runs' figures: nearest-rank percentiles of send-to-ack and send-to-arrival times."""
from __future__ import annotations

import math

from minikafka.bench.figures import ack_and_arrival_ms


def test_ack_and_arrival_figures_are_nearest_rank_in_ms_of_unsorted_times():
    acked = [i / 1000 for i in range(1000, 0, -1)]  # 1..1000 ms, newest first
    out = ack_and_arrival_ms(acked, [0.004, 0.002])
    assert (out["p50_ms"], out["p99_ms"], out["p999_ms"]) == (501.0, 991.0, 1000.0)
    assert (out["e2e_p50_ms"], out["e2e_p99_ms"]) == (4.0, 4.0)
    assert (out["records"], out["consumed"]) == (1000, 2)


def test_a_run_with_no_arrival_reports_nan_not_zero():
    out = ack_and_arrival_ms([0.001], [])
    assert out["p50_ms"] == 1.0 and math.isnan(out["e2e_p50_ms"]) and out["consumed"] == 0
