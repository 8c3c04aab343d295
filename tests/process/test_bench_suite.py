"""``minikafka bench suite``: every scenario runs on a cluster of its own, with real
clients (ours and kcat through the Kafka listener) and both yardsticks, and reports its
figures. Speed is never asserted here: only that every figure is measured and sane."""
from __future__ import annotations

import json
import math
import os

import pytest

from minikafka.bench.scenarios import JARS_ENV
from minikafka.cluster.state import pid_alive
from minikafka.reference import cluster as reference
from process_helpers import kill_recorded_pids, run_cli


@pytest.mark.process
def test_the_quick_suite_measures_every_scenario_against_both_yardsticks(tmp_path, kafka_tools_jars):
    out = tmp_path / "figures.json"
    folder = tmp_path / "cluster"
    try:
        done = run_cli("bench", "suite", "--quick", "--runs", "1", "--json", str(out), "--dir", str(folder),
                       timeout_s=420, env={**os.environ, JARS_ENV: str(kafka_tools_jars)})
    finally:
        kill_recorded_pids(folder)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not folder.exists(), "the suite removes its cluster folder"
    table = done.stdout
    for scenario in ("produce RF1 acks=1", "produce RF3 acks=1", "produce RF3 acks=all min.isr=2", "consume",
                     "latency acks=all RF3", "latency acks=all RF3 at 1,000/s, linger 0",
                     "latency acks=all RF3 at 2,000/s, linger 0",
                     "failover: leader SIGKILL", "failover: controller SIGKILL",
                     "failover: controlled shutdown of the leader", "memory", "catch-up", "spark count",
                     "end-to-end latency acks=all RF3, one record at a time",
                     "produce RF3 acks=all min.isr=2 idempotent", "produce RF3 acks=all min.isr=2 transactional"):
        assert scenario in table, f"{scenario} missing from\n{table}"
    assert "skipped" not in table, table
    assert "is left in place" not in done.stdout + done.stderr, "each run's topics are deleted after it"
    rows = json.loads(out.read_text())["rows"]
    throughput = [r for r in rows if "records_per_s" in r]
    assert {(r["scenario"], r["client"]) for r in throughput} >= {
        ("produce RF3 acks=all min.isr=2", "python"), ("produce RF3 acks=all min.isr=2", "kcat (C)"),
        ("produce RF3 acks=all min.isr=2", "python send_many"),
        ("produce RF3 acks=all min.isr=2", "kafka-python"), ("produce RF3 acks=all min.isr=2", "aiokafka"),
        ("consume", "python"), ("consume", "kcat (C)"), ("consume", "python poll_batches+values"),
        ("consume", "python poll_batches+to_arrow"),
        ("produce RF3 acks=all min.isr=2", "ProducerPerformance (Java)"), ("consume", "ConsumerPerformance (Java)")}
    for r in throughput:
        assert r["records_per_s"]["median"] > 0
        if r["scenario"].startswith("spark"):
            continue  # no yardstick for Spark
        assert 0 < r["ratio_to_limit"] < 100, r
        if r["scenario"].startswith("produce"):
            assert r["ratio_to_mock"] > 0, r
    # our Producer over the faster of its pure-Python peers, which sent the same records
    (ours,) = [r for r in throughput if r["scenario"] == "produce RF3 acks=all min.isr=2" and r["client"] == "python"]
    peers = [r["records_per_s"]["median"] for r in throughput
             if r["scenario"] == "produce RF3 acks=all min.isr=2" and r["client"] in ("kafka-python", "aiokafka")]
    assert ours["vs_peers"]["median"] == pytest.approx(ours["records_per_s"]["median"] / max(peers))
    failovers = [r for r in rows if r["scenario"].startswith("failover")]
    assert len(failovers) == 3
    for r in failovers:
        assert r["failed"]["median"] == 0, f"acks=all records were lost or failed in {r}"
        assert math.isfinite(r["to_first_ack_ms"]["median"]) and r["to_first_ack_ms"]["median"] >= 0
    # the cost of transactions: idempotent and transactional rows per client, with their ratio
    for client in ("python", "confluent-kafka (C)"):
        (idem,) = [r for r in rows if r["scenario"] == "produce RF3 acks=all min.isr=2 idempotent" and r["client"] == client]
        (txn,) = [r for r in rows if r["scenario"] == "produce RF3 acks=all min.isr=2 transactional, a commit every 1,000"
                  and r["client"] == client]
        assert idem["records_per_s"]["median"] > 0 and txn["records_per_s"]["median"] > 0
        ratio = txn["vs_idempotent"]["median"]
        assert ratio == pytest.approx(txn["records_per_s"]["runs"][0] / idem["records_per_s"]["runs"][0]), txn
    # the cost of a delivery callback per record: without and with one per record, per client, with the ratio
    base = "produce RF3 acks=all min.isr=2"
    for client in ("python", "python asyncio", "confluent-kafka (C)"):
        (plain,) = [r for r in rows if r["scenario"] == f"{base}, no callback (paired)" and r["client"] == client]
        (cb,) = [r for r in rows if r["scenario"] == f"{base}, a delivery callback per record" and r["client"] == client]
        assert plain["records_per_s"]["median"] > 0 and cb["records_per_s"]["median"] > 0
        assert cb["vs_plain"]["median"] == pytest.approx(cb["records_per_s"]["runs"][0] / plain["records_per_s"]["runs"][0])
    (catchup,) = [r for r in rows if r["scenario"].startswith("catch-up")]
    assert catchup["mb_per_s"]["median"] > 0
    assert catchup["refetched_mb"]["median"] >= 5, "the follower refetched at least the topic's 50,000 records"
    (latency,) = [r for r in rows if r["scenario"].startswith("latency") and "linger 0" not in r["scenario"]]
    assert 0 < latency["p50_ms"]["median"] <= latency["p99_ms"]["median"] <= latency["p999_ms"]["median"]
    for r in [latency] + [r for r in rows if "linger 0" in r["scenario"]]:
        # the brokers' own view of each latency run: every tick lands in a bucket of at least 1 ms
        assert 1 <= r["loop_lag_p99_ms"]["median"] <= r["loop_lag_max_ms"]["median"], r
        assert r["loop_stalls"]["median"] >= 0 and r["gc_pause_ms"]["median"] >= 0, r
    low_rate = {r["client"]: r for r in rows if r["scenario"].startswith("latency acks=all RF3 at 1,000/s, linger 0")}
    assert set(low_rate) == {"python", "python asyncio", "confluent-kafka (C)"}, rows
    # and at the latency row's rate (--quick: 2,000/s), where only in-flight limits batch
    high_rate = [r for r in rows if r["scenario"].startswith("latency acks=all RF3 at 2,000/s, linger 0")]
    assert {r["client"] for r in high_rate} == {"python asyncio", "confluent-kafka (C)"}, rows
    for r in list(low_rate.values()) + high_rate:
        assert 0 < r["p50_ms"]["median"] <= r["p99_ms"]["median"] <= r["p999_ms"]["median"], r
        assert 0 < r["e2e_p50_ms"]["median"] <= r["e2e_p99_ms"]["median"], r
    (e2e,) = [r for r in rows if r["client"] == "EndToEndLatency (Java)"]
    assert 0 <= e2e["p50_ms"]["median"] <= e2e["p99_ms"]["median"] <= e2e["p999_ms"]["median"]
    assert e2e["avg_ms"]["median"] > 0


@pytest.mark.process
def test_against_kafka_every_compared_row_has_both_clusters_figures_and_kafka_is_stopped(tmp_path, kafka_tools_jars):
    """``--against kafka``: the compared scenarios on a cluster of ours, then on Kafka 3.9 started
    by the suite in --reference-dir, which it stops (by pid) and removes at the end."""
    out = tmp_path / "figures.json"
    ours, kafka_dir = tmp_path / "cluster", tmp_path / "kafka"
    try:
        done = run_cli("bench", "suite", "--quick", "--runs", "1", "--against", "kafka", "--only-compared",
                       "--json", str(out), "--dir", str(ours), "--reference-dir", str(kafka_dir),
                       timeout_s=420, env={**os.environ, JARS_ENV: str(kafka_tools_jars)})
    finally:
        kill_recorded_pids(ours)
        if (kafka_dir / reference.STATE_FILE).exists():
            reference.down(kafka_dir)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    figure_of = {"produce RF3 acks=1": "records_per_s", "produce RF3 acks=all min.isr=2": "records_per_s",
                 "consume": "records_per_s", "end-to-end latency acks=all RF3 at 2,000/s, p99": "e2e_p99_ms",
                 "catch-up of a follower restarted empty, 50,000 records": "seconds",
                 "failover: leader SIGKILL, to the first ack": "to_first_ack_ms"}
    rows = {r["scenario"].removesuffix(" (both clusters)"): r for r in data["rows"]}
    assert set(rows) == set(figure_of), sorted(rows)
    for scenario, key in figure_of.items():
        r = rows[scenario]
        ours_fig, kafka_fig = r[key]["median"], r["kafka"][key]["median"]
        assert math.isfinite(ours_fig) and ours_fig > 0 and math.isfinite(kafka_fig) and kafka_fig > 0, r
        assert r["ratio_to_kafka"] == pytest.approx(ours_fig / kafka_fig), r
        assert r["higher_is_better"] == (key == "records_per_s"), r
    for r in (rows["failover: leader SIGKILL, to the first ack"],):
        assert r["failed"]["median"] == 0 and r["kafka"]["failed"]["median"] == 0, r
    goals = {s for s, r in rows.items() if "goal" in r}
    assert goals == {"produce RF3 acks=all min.isr=2", "consume", "end-to-end latency acks=all RF3 at 2,000/s, p99",
                     "failover: leader SIGKILL, to the first ack"}
    assert all(isinstance(rows[s]["goal"]["met"], bool) for s in goals)
    table = done.stdout
    assert "Kafka 3.9" in table and "vs Kafka (ours / Kafka)" in table
    assert table.count("x Kafka's throughput (higher is better)") == 3, table
    assert "x Kafka's p99 (lower is better)" in table and table.count("x Kafka's time (lower is better)") == 2
    assert "goals against Kafka" in table and "never ran at once" in table
    # the suite started Kafka, so it stopped every process of it and removed its folder
    assert data["kafka"]["started_here"] and data["kafka"]["version"].startswith("3.9.")
    assert len(data["kafka"]["pids"]) >= 4 and not [p for p in data["kafka"]["pids"] if pid_alive(p)]
    assert not kafka_dir.exists() and not ours.exists()


@pytest.mark.process
def test_bench_produce_times_every_record_from_its_batch_and_prints_throughput_and_latency(cluster):
    for extra in ((), ("--on-delivery",)):
        done = run_cli("bench", "produce", "--bootstrap-server", cluster.bootstrap, "--records", "3000",
                       "--topic", "bench-produce-check", *extra)
        assert done.returncode == 0, done.stderr[-2000:]
        fields = dict(f.split("=", 1) for f in done.stdout.split() if "=" in f)
        assert fields["records"] == "3000" and fields["failed"] == "0", done.stdout
        assert fields["on_delivery"] == ("on" if extra else "off")
        assert float(fields["records_per_s"].replace(",", "")) > 0
        assert 0 < float(fields["latency_ms_p50"]) <= float(fields["p99"]) <= float(fields["p99.9"]), done.stdout


def test_a_bad_run_count_is_one_line_and_exit_2():
    done = run_cli("bench", "suite", "--runs", "0")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "--runs must be at least 1" in done.stderr


def test_the_kafka_only_options_without_against_kafka_are_one_line_and_exit_2():
    done = run_cli("bench", "suite", "--only-compared")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "go with --against kafka" in done.stderr
