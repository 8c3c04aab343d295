"""The latency rows' broker figures: /metrics read before and after a run."""
from __future__ import annotations

import math

import pytest

from minikafka import errors
from minikafka.bench import broker_metrics as bm

TEXT = """# HELP minikafka_event_loop_lag_seconds lag
# TYPE minikafka_event_loop_lag_seconds histogram
minikafka_event_loop_lag_seconds_bucket{le="0.001"} 90
minikafka_event_loop_lag_seconds_bucket{le="0.01"} 99
minikafka_event_loop_lag_seconds_bucket{le="+Inf"} 100
minikafka_event_loop_lag_seconds_sum 0.5
minikafka_event_loop_lag_seconds_count 100
minikafka_gc_pause_seconds_sum{generation="0"} 0.25
minikafka_gc_pause_seconds_sum{generation="2"} 0.5
minikafka_bytes_in_total 1234
"""


def test_prometheus_text_becomes_samples_by_name_and_labels():
    samples = bm.parse(TEXT)
    assert samples['minikafka_event_loop_lag_seconds_bucket{le="0.01"}'] == 99
    assert bm.value(samples, "minikafka_bytes_in_total") == 1234
    assert bm._sum_of(samples, "minikafka_gc_pause_seconds") == 0.75
    with pytest.raises(errors.ClientError, match="reports no minikafka_nothing"):
        bm.value(samples, "minikafka_nothing")


def test_quantiles_count_only_the_observations_between_the_two_readings():
    before = [(0.001, 90.0), (0.01, 99.0), (math.inf, 100.0)]
    after = [(0.001, 190.0), (0.01, 199.0), (math.inf, 200.0)]  # 100 more, all under 1 ms
    assert bm.quantile_bound(before, after, 0.99) == 0.001
    after = [(0.001, 91.0), (0.01, 190.0), (math.inf, 200.0)]  # 1 under 1 ms, 90 under 10 ms, 9 beyond
    assert bm.quantile_bound(before, after, 0.5) == 0.01
    assert bm.quantile_bound(before, after, 0.99) == 0.01  # beyond the last bound: reported as that bound
    assert bm.quantile_bound(before, before, 0.99) == 0.0  # nothing observed
