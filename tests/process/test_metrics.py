"""/metrics against the real state of a live cluster: controller count, incremental fetch
sessions keeping idle partitions' followers in the ISR, ISR shrink and expand under a
paused follower, follower lag, request counters, leader elections and
offline partitions after a leader is killed."""
from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest

from minikafka import Admin, Producer
from minikafka.broker.metrics import LATENCY_BUCKETS, Metrics, render_prometheus
from minikafka.metric_names import REQUEST_ERRORS
from metrics_text import Scrape, parse, sources
from process_helpers import wait_for
from replica_checks import post

LAG_MS = 1500


def scrape(port: int) -> Scrape | None:
    """The broker's /metrics, parsed; None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2.0) as resp:
            assert resp.headers["Content-Type"].startswith("text/plain")
            return parse(resp.read().decode())
    except (OSError, urllib.error.URLError):
        return None


def led_partitions(port: int) -> list[dict]:
    """The replicas a broker leads, from its own replica_state answer."""
    return [r for r in post(port, "replica_state", {}, timeout_s=2.0)["replicas"] if r["role"] == "leader"]


# ---------------------------------------------------------------- unit

def test_request_histogram_is_cumulative_and_matches_count_and_sum():
    m = Metrics()
    for s in (0.0005, 0.003, 0.003, 0.2, 99.0):
        m.observe_request("produce", s)
    m.count(REQUEST_ERRORS, error="NOT_LEADER_OR_FOLLOWER")
    got = parse(render_prometheus(m, sources()))
    buckets = [got.value("minikafka_request_seconds_bucket", api="produce", le=repr(b)) for b in LATENCY_BUCKETS]
    assert buckets == sorted(buckets)
    assert got.value("minikafka_request_seconds_bucket", api="produce", le="0.001") == 1
    assert got.value("minikafka_request_seconds_bucket", api="produce", le="0.005") == 3
    assert got.value("minikafka_request_seconds_bucket", api="produce", le="0.25") == 4
    assert got.value("minikafka_request_seconds_bucket", api="produce", le="30.0") == 4
    assert got.value("minikafka_request_seconds_bucket", api="produce", le="+Inf") == 5
    assert got.value("minikafka_request_seconds_count", api="produce") == 5
    assert got.value("minikafka_requests_total", api="produce") == 5
    assert got.value("minikafka_request_seconds_sum", api="produce") == pytest.approx(99.2065)
    assert got.value("minikafka_request_errors_total", error="NOT_LEADER_OR_FOLLOWER") == 1
    assert got.value("minikafka_active_controller_count") == 0
    assert got.value("minikafka_broker_info", broker_id=7, storage="memory", cluster_id="c") == 1


# ---------------------------------------------------------------- process

@pytest.mark.process
def test_controller_count_isr_shrink_expand_lag_and_requests(make_cluster):
    handle = make_cluster(broker_configs={"replica.lag.time.max.ms": str(LAG_MS)})
    ports = handle.brokers

    def controllers() -> int | None:
        scrapes = [scrape(p) for p in ports.values()]
        if any(s is None for s in scrapes):
            return None
        return sum(int(s.value("minikafka_active_controller_count")) for s in scrapes)

    wait_for(lambda: controllers() == 1, timeout_s=20, message="exactly one active controller")

    with Admin(handle.bootstrap) as admin:
        admin.create_topic("m", partitions=3, replication_factor=3)
        (desc,) = admin.describe_topics(["m"])
        controller = admin.cluster().controller_id
    p0 = desc.partitions[0]
    leader = p0.leader
    follower = next(b for b in p0.replicas if b not in (leader, controller))
    lport = ports[leader]

    def all_in_sync() -> bool:
        scrapes = {b: scrape(p) for b, p in ports.items()}
        return all(s is not None and s.value("minikafka_under_replicated_partitions") == 0 for s in scrapes.values()) \
            and all(len(r["isr"]) == 3 for p in ports.values() for r in led_partitions(p))

    wait_for(all_in_sync, timeout_s=20, message="every ISR complete and no under-replicated partition")
    before = scrape(lport)
    assert before.value("minikafka_leader_count") == len(led_partitions(lport))
    assert before.value("minikafka_partition_count") == 3

    with Producer(handle.bootstrap, acks="all", linger_ms=1) as producer:
        for i in range(5):
            producer.send("m", b"in-sync-%d" % i, partition=0)
        producer.flush()
    after_produce = scrape(lport)
    assert after_produce.value("minikafka_requests_total", api="produce") >= 1
    assert (after_produce.value("minikafka_request_seconds_count", api="produce")
            == after_produce.value("minikafka_requests_total", api="produce"))
    assert after_produce.value("minikafka_bytes_in_total") > before.value("minikafka_bytes_in_total")
    assert after_produce.value("minikafka_log_end_offset", topic="m", partition=0) == 5
    wait_for(lambda: scrape(lport).value("minikafka_high_watermark", topic="m", partition=0) == 5,
             message="the leader's HW gauge reaching 5")

    # incremental fetch sessions (KIP-227): the followers' fetches name only the partitions
    # that changed, yet the leaders still count them as fetching the idle partitions 1 and
    # 2: their followers stay in the ISR past replica.lag.time.max.ms while only partition
    # 0 gets records
    def total(name: str, **labels: str) -> float:
        return sum(scrape(p).get_value(name, **labels) for p in ports.values())

    shrinks_before = total("minikafka_isr_shrinks_total")
    started = time.monotonic()
    with Producer(handle.bootstrap, acks="all", linger_ms=1) as producer:
        n = 0
        while time.monotonic() - started < 3 * LAG_MS / 1000:
            producer.send("m", b"busy-%d" % n, partition=0).result(timeout=30)
            n += 1
            time.sleep(0.02)  # pacing, not a wait for a condition
    assert total("minikafka_isr_shrinks_total") == shrinks_before
    assert all(len(r["isr"]) == 3 for p in ports.values() for r in led_partitions(p))
    assert total("minikafka_incremental_fetches_total", fetcher="replica") > 0
    assert scrape(lport).value("minikafka_incremental_fetch_sessions") >= 1
    assert scrape(lport).value("minikafka_incremental_fetch_partitions_cached") >= 2

    shrinks = after_produce.value("minikafka_isr_shrinks_total")
    expands = after_produce.value("minikafka_isr_expands_total")
    handle.kill(follower, "STOP")
    try:
        with Producer(handle.bootstrap, acks=1, linger_ms=1) as producer:
            for i in range(20):
                producer.send("m", b"lagging-%d" % i, partition=0)
            producer.flush()

        # the leader still remembers the paused follower's LEO (5): it lags by 20 records
        wait_for(lambda: scrape(lport).value("minikafka_max_follower_lag") >= 20, timeout_s=5,
                 message="max follower lag >= 20 on the leader")
        lag = scrape(lport).value("minikafka_partition_follower_lag", topic="m", partition=0, replica=follower)
        assert lag == 20

        def shrunk() -> bool:
            s = scrape(lport)
            real = sum(1 for r in led_partitions(lport) if len(r["isr"]) < len(r["replicas"]))
            return (s.value("minikafka_isr_shrinks_total") > shrinks
                    and s.value("minikafka_under_replicated_partitions") >= 1
                    and s.value("minikafka_under_replicated_partitions") == real
                    and s.value("minikafka_partition_under_replicated", topic="m", partition=0) == 1
                    and s.value("minikafka_partition_in_sync_replicas_count", topic="m", partition=0) == 2)

        wait_for(shrunk, timeout_s=LAG_MS * 3 / 1000 + 5, message="ISR shrink counted on the leader")
    finally:
        handle.resume(follower)

    def expanded() -> bool:
        s = scrape(lport)
        real = sum(1 for r in led_partitions(lport) if len(r["isr"]) < len(r["replicas"]))
        return (s.value("minikafka_isr_expands_total") > expands
                and s.value("minikafka_under_replicated_partitions") == 0 == real
                and s.value("minikafka_max_follower_lag") == 0)

    wait_for(expanded, timeout_s=30, message="ISR expand counted on the leader after resume")
    wait_for(lambda: controllers() == 1, timeout_s=20, message="still exactly one active controller")


@pytest.mark.process
def test_leader_elections_and_offline_partitions_after_a_leader_dies(make_cluster):
    handle = make_cluster()
    ports = handle.brokers
    with Admin(handle.bootstrap) as admin:
        controller = admin.cluster().controller_id
        victim = next(b for b in sorted(ports) if b != controller)
        other = next(b for b in sorted(ports) if b not in (controller, victim))
        admin.create_topic("e", partitions=1, replication_factor=3, assignment={0: [victim, controller, other]})
        admin.create_topic("solo", partitions=1, replication_factor=1, assignment={0: [victim]})
    cport = ports[controller]
    wait_for(lambda: scrape(cport) is not None and scrape(cport).value("minikafka_global_partition_count") == 2,
             message="the controller counting 2 partitions")
    before = scrape(cport)
    assert before.value("minikafka_active_controller_count") == 1
    assert before.value("minikafka_offline_partitions_count") == 0
    assert before.value("minikafka_global_topic_count") == 2
    elections = before.value("minikafka_leader_elections_total")
    # the victim learns it leads both from the controller's LeaderAndIsr, a moment later
    wait_for(lambda: scrape(ports[victim]).value("minikafka_leader_count") == 2, timeout_s=30,
             message="the victim leading both partitions")

    handle.kill(victim, "KILL")

    def failed_over() -> bool:
        s = scrape(cport)
        return (s.value("minikafka_leader_elections_total") > elections
                and s.value("minikafka_offline_partitions_count") == 1
                and s.value("minikafka_live_broker_count") == 2)

    wait_for(failed_over, timeout_s=30, message="a leader election and one offline partition on the controller")
    with Admin(f"127.0.0.1:{cport}") as admin:
        parts = {d.name: d.partitions[0] for d in admin.describe_topics(["e", "solo"])}
    assert parts["e"].leader in (controller, other)
    assert parts["solo"].leader == -1
    final = scrape(cport)
    assert final.value("minikafka_unclean_leader_elections_total") == 0
    assert scrape(ports[other]).value("minikafka_offline_partitions_count") == 0
    assert sum(scrape(p).value("minikafka_active_controller_count") for b, p in ports.items() if b != victim) == 1
    new_leader = ports[parts["e"].leader]
    wait_for(lambda: scrape(new_leader).get_value("minikafka_partition_is_leader", topic="e", partition=0) == 1,
             message="the new leader's per-partition gauge")
