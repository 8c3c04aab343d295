"""The pure parts of ``minikafka bench scale``: cores from /proc samples, RSS, the table
row, and option validation (one line, exit 2)."""
from __future__ import annotations

import math

import pytest

from minikafka.bench import scale
from minikafka.cli.main import main
from minikafka.errors import ClientError

# /proc/PID/stat of a process whose name holds a space and a parenthesis: utime 1234, stime 56
STAT = ("4242 (python -m (x)) S 1 4242 4242 0 -1 4194560 9000 0 0 0 1234 56 0 0 20 0 3 0 "
        "100 200000000 5000 18446744073709551615 1 1 0 0 0 0 0 16781312 16386 0 0 0 17 1 0 0 0 0 0")


def test_cpu_ticks_are_utime_plus_stime_counted_after_the_name():
    assert scale.cpu_ticks(STAT) == 1234 + 56


def test_cores_from_two_samples():
    before = {1: 100, 2: 50, 3: 10}
    after = {1: 150, 2: 100, 4: 999}  # 3 went away, 4 is new: neither counts
    assert scale.cores(before, after, seconds=2.0, hz=100) == pytest.approx((50 + 50) / 100 / 2.0)
    assert scale.cores({1: 5}, {1: 5}, 1.0, 100) == 0
    with pytest.raises(ValueError):
        scale.cores(before, after, 0, 100)


def test_vmrss_in_bytes_and_zero_without_it():
    assert scale.vmrss_bytes("Name:\tpython\nVmRSS:\t  2048 kB\nThreads:\t3\n") == 2048 * 1024
    assert scale.vmrss_bytes("Name:\tzombie\nState:\tZ\n") == 0


def test_memory_per_replica():
    assert scale.per_replica_bytes(rss=130_000, empty_rss=100_000, partitions=1000, rf=3) == 10.0


def test_topic_sizes_add_up_to_the_total():
    assert scale.topic_sizes(30, 10) == [10, 10, 10]
    assert scale.topic_sizes(25, 10) == [10, 10, 5]
    assert scale.topic_sizes(3, 10) == [3]
    assert sum(scale.topic_sizes(5000, 7)) == 5000


def test_percentile_nearest_rank():
    values = sorted(float(i) for i in range(1, 101))
    assert scale.percentile(values, 0.5) == 51.0
    assert scale.percentile(values, 0.99) == 100.0
    assert math.isnan(scale.percentile([], 0.5))


def test_a_row_reads_as_the_issues_table():
    row = scale.ScaleRow(partitions=1003, cluster="minikafka", creation_s=6.14, idle_cores=0.1234,
                         rss_bytes=182_000_000, empty_rss_bytes=150_000_000, per_replica_bytes=10_666.7,
                         ack_p50_ms=63.2, ack_p99_ms=159.4)
    line = scale.format_row(row)
    assert line == "| 1,003 | minikafka | 6.1 s | 0.123 | 182 MB | 10.4 KB | 63 ms | 159 ms |"
    assert scale.HEADER.splitlines()[0].count("|") == line.count("|")
    row.empty_idle_cores = 0.1
    assert "| 0.123 (empty 0.100) |" in scale.format_row(row)
    row.failover_s = 5.671
    assert scale.format_row(row).endswith("| failover 5.67 s")
    row.catch_up_s, row.cluster_restart_s = 12.345, 20.0
    assert scale.format_row(row).endswith("| failover 5.67 s broker restart 12.35 s cluster restart 20.00 s")
    nan = scale.ScaleRow(3, "x", 0.1, 0.0, 1, 1, float("nan"), float("nan"), 2.5)
    assert "| - | - | 2.5 ms |" in scale.format_row(nan)


def test_sizes_parse_and_bad_ones_are_client_errors():
    assert scale.parse_sizes("1000,5_000, 10000") == [1000, 5000, 10000]
    for bad in ("0", "-5", "many", "1000,"):
        with pytest.raises(ClientError):
            scale.parse_sizes(bad)


@pytest.mark.parametrize("change, words", [
    ({"partitions": [0]}, "--partitions"),
    ({"rf": 4}, "--rf"),
    ({"rf": 0}, "--rf"),
    ({"per_topic": 0}, "--per-topic"),
    ({"idle_seconds": 0}, "--idle-seconds"),
    ({"rate": 0}, "--rate"),
    ({"against": "pulsar"}, "--against takes kafka"),
    ({"against": "kafka", "bootstrap": "127.0.0.1:9092"}, "--bootstrap-server"),
    ({"failover": True, "bootstrap": "127.0.0.1:9092"}, "--failover"),
    ({"storage": "tape"}, "--storage takes memory or disk"),
    ({"against": "kafka", "kafka_heap": "lots"}, "--kafka-heap must be a size"),
    ({"against": "kafka", "kafka_heap": "0g"}, "--kafka-heap must be a size"),
    ({"restart": True}, "--restart needs --storage disk"),
    ({"restart": True, "storage": "disk", "bootstrap": "127.0.0.1:9092"}, "--restart stops brokers"),
])
def test_validation_names_the_option(change, words):
    opts = scale.ScaleOptions(**change)
    with pytest.raises(ClientError, match=words):
        scale.validate(opts)


def test_defaults_are_valid():
    scale.validate(scale.ScaleOptions())


@pytest.mark.parametrize("argv", [
    ["--partitions", "0"],
    ["--rf", "4"],
    ["--brokers", "2", "--rf", "3"],
    ["--against", "pulsar"],
    ["--partitions", "lots"],
])
def test_bad_input_prints_one_line_and_exits_2(argv, capsys):
    assert main(["bench", "scale", *argv]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert len(out.err.strip().splitlines()) == 1, out.err
