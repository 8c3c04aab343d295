"""The dashboard in headless Chromium (Playwright) against live clusters: controller and
ISRs as the cluster reports them, a leader failover shown with its election event, a
page served while its broker is the only one alive, under-min-ISR flags, topic configs,
produce and fetch rates, the record browser, internal topics kept out of the way, an open
transaction (the partition's LSO below its HW, the transactions panel, the coordinator's
events on the timeline, and ``topics describe``'s LastStableOffset), the layout at
1280, 1400 and 1920 px, the page moving to a live broker's dashboard when its own broker
dies, a page of another site that can neither change a broker nor read its records, and
the page on a SASL listener (a user and password asked, then used).

Needs the ``playwright`` Python package (dev extra) and Debian's chromium at
/usr/bin/chromium; Playwright's own browser download is never used.  The failover test
writes its screenshot to docs/images/dashboard.png (the picture of the README and
docs/metrics.md), so the picture is regenerated whenever the browser tests run: commit
it with a change to the page.  The picture names the ports ``minikafka cluster up``
gives (the page's /api/state is answered with them for the picture), not the test's.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import threading
import urllib.request
from pathlib import Path

import pytest

from minikafka import Admin, Producer
from process_helpers import run_cli, wait_for

import playwright.sync_api as sync_api  # noqa: E402  (installed by the dev extra)

expect = sync_api.expect

CHROMIUM = os.environ.get("MINIKAFKA_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
REPO = Path(__file__).resolve().parents[2]
# Failover waits for the dead broker's ZooKeeper session to expire (6 s by default).
FAILOVER_MS = 30_000
# the page's polls of /api/state, whatever rows they ask for (?topic=...&offset=...)
STATE_ROUTE = re.compile(r"/api/state(\?.*)?$")

pytestmark = [pytest.mark.process]


def test_chromium_is_installed():
    """CI installs Debian's chromium in .ci/run; without it the browser tests cannot run."""
    assert os.path.exists(CHROMIUM), f"no Chromium at {CHROMIUM}: apt-get install chromium"


@pytest.fixture(scope="module")
def playwright_driver():
    """Playwright's driver for the module (one per thread)."""
    with sync_api.sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="module")
def browser(tmp_path_factory, playwright_driver):
    """One headless Chromium for the module, with a fresh profile folder."""
    context = playwright_driver.chromium.launch_persistent_context(
        str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, headless=True,
        args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 900})
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def page(browser):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    page.unroute_all(behavior="ignoreErrors")
    page.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def api_state(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=5) as resp:
        return json.load(resp)


def describe(bootstrap: str, topic: str):
    with Admin(bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    return desc


def row(page, topic: str, partition: int):
    return page.locator(f'tr.partition[data-topic="{topic}"][data-partition="{partition}"]')


def ids(values) -> str:
    return ",".join(str(v) for v in values)


def visible_rows(page) -> list[str]:
    """The topics of the partition table's visible rows, top to bottom."""
    return page.eval_on_selector_all("tr.partition", "rows => rows.filter((r) => r.offsetParent !== null)"
                                                     ".map((r) => r.dataset.topic)")


def with_default_ports(route) -> None:
    """Answer the page's /api/state with the ports ``minikafka cluster up`` gives (ZooKeeper
    2181, broker N on 9091+N and its Kafka listener on 29091+N) in place of the test
    cluster's free ports: for the documentation's picture only."""
    resp = route.fetch()
    state = resp.json()
    for b in state["brokers"]:
        b["port"] = 9091 + b["id"]
        if b.get("kafka"):
            b["kafka"] = f"{b['kafka'].rpartition(':')[0]}:{29091 + b['id']}"
    zookeeper = state.get("zookeeper") or {}
    zookeeper["connect"] = "127.0.0.1:2181"
    for server in zookeeper.get("servers") or ():
        server["port"] = 2181
    route.fulfill(response=resp, json=state)


def test_dashboard_shows_controller_isr_and_a_leader_failover(make_cluster, page, tmp_path):
    from minikafka import Consumer, TopicPartition

    handle = make_cluster()
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("orders", partitions=3, replication_factor=3)
        admin.create_topic("audit", partitions=1, replication_factor=2)
        controller = admin.cluster().controller_id
    with Producer(handle.bootstrap, acks="all", linger_ms=1) as producer:
        for p, n in ((0, 120), (1, 80), (2, 100)):
            for i in range(n):
                producer.send("orders", b"order-%d" % i, key=b"customer-%d" % (i % 7), partition=p)
        for i in range(30):
            producer.send("audit", b"entry-%d" % i, partition=0)
        producer.flush()
    # a group: __consumer_offsets exists (10 partitions), and its events join the failover's
    consumer = Consumer(handle.bootstrap, group_id="billing", auto_offset_reset="earliest", enable_auto_commit=False)
    consumer.subscribe(["orders"])
    wait_for(lambda: consumer.poll(timeout_ms=200) is not None and len(consumer.assignment()) == 3, timeout_s=60,
             message="the consumer owning the 3 partitions")
    consumer.commit({TopicPartition("orders", p): off for p, off in ((0, 100), (1, 80), (2, 64))})

    page.goto(f"http://127.0.0.1:{handle.brokers[controller]}/")

    # the controller and its epoch, as the cluster reports them
    expect(page.locator("#controller")).to_have_attribute("data-controller-id", str(controller))
    epoch = api_state(handle.brokers[controller])["controller"]["epoch"]
    expect(page.locator("#controller")).to_have_attribute("data-controller-epoch", str(epoch))
    expect(page.locator(f"#broker-{controller}")).to_have_attribute("data-controller", "true")
    for b in handle.brokers:
        expect(page.locator(f"#broker-{b}")).to_have_attribute("data-alive", "true")
        expect(page.locator(f"#broker-{b}")).to_have_attribute("data-zookeeper-session", "connected")
    # the ZooKeeper server and its mode, from its own srvr answer
    zk_port = handle.zk_connect.split(":")[-1]
    expect(page.locator(f'.zk-server[data-endpoint="127.0.0.1:{zk_port}"]')).to_have_attribute("data-mode", "standalone")

    # every partition: leader, epoch, replicas in AR order and ISR, and a bar per replica at the HW
    desc = describe(handle.bootstrap, "orders")
    for p in desc.partitions:
        r = row(page, "orders", p.partition)
        expect(r).to_have_attribute("data-leader", str(p.leader))
        expect(r).to_have_attribute("data-leader-epoch", str(p.leader_epoch))
        expect(r).to_have_attribute("data-replicas", ids(p.replicas))
        expect(r).to_have_attribute("data-isr", ids(p.isr))
        expect(r).to_have_attribute("data-under-replicated", "false")
        expect(r.locator(".replica")).to_have_count(3)
        expect(r.locator(".replica").first).to_have_attribute("data-broker-id", str(p.replicas[0]))
        hw = {0: 120, 1: 80, 2: 100}[p.partition]
        expect(r).to_have_attribute("data-hw", str(hw))
        for b in p.replicas:
            expect(r.locator(f'.replica[data-broker-id="{b}"]')).to_have_attribute("data-leo", str(hw))
    audit = describe(handle.bootstrap, "audit").partitions[0]
    expect(row(page, "audit", 0)).to_have_attribute("data-isr", ids(audit.isr))
    expect(page.locator('li.event[data-kind="controller_elected"]').first).to_be_visible()

    # the internal topic's partitions come after the others, left out until asked for
    offsets_rows = page.locator('tr.partition[data-topic="__consumer_offsets"]')
    expect(page.locator("#internal-count")).to_have_attribute("data-hidden", "10", timeout=30_000)
    expect(offsets_rows).to_have_count(0)
    assert visible_rows(page) == ["audit", "orders", "orders", "orders"]
    page.check("#show-internal")
    expect(offsets_rows).to_have_count(10)
    expect(offsets_rows.first).to_be_visible()
    assert visible_rows(page) == ["audit"] + ["orders"] * 3 + ["__consumer_offsets"] * 10
    page.uncheck("#show-internal")
    expect(offsets_rows.first).to_be_hidden()
    # the record browser offers the application's topics first, at partition 0
    expect(page.locator("#rec-topic")).to_have_value("audit")
    expect(page.locator("#rec-partition")).to_have_value("0")
    assert page.eval_on_selector_all("#rec-topic option", "os => os.map((o) => o.value)") == \
        ["audit", "orders", "__consumer_offsets"]

    # kill the leader of an "orders" partition (not the broker serving the page)
    victim_part = next(p for p in desc.partitions if p.leader != controller)
    victim = victim_part.leader
    handle.kill(victim, "KILL")

    r = row(page, "orders", victim_part.partition)
    expect(r).not_to_have_attribute("data-leader", str(victim), timeout=FAILOVER_MS)
    after = wait_for(lambda: (d := describe(f"127.0.0.1:{handle.brokers[controller]}", "orders"))
                     and d.partitions[victim_part.partition].leader not in (victim, -1) and d,
                     timeout_s=FAILOVER_MS / 1000, message="a new leader in the metadata")
    new = after.partitions[victim_part.partition]
    expect(r).to_have_attribute("data-leader", str(new.leader))
    expect(r).to_have_attribute("data-leader-epoch", str(new.leader_epoch))
    expect(r).to_have_attribute("data-isr", ids(new.isr))
    expect(r).to_have_attribute("data-under-replicated", "true")
    expect(r.locator(f'.replica[data-broker-id="{victim}"]')).to_have_attribute("data-alive", "false")
    election = page.locator(
        f'li.event[data-kind="leader_elected"][data-topic="orders"][data-partition="{victim_part.partition}"]'
    ).filter(has_text=f"leader {new.leader} at epoch {new.leader_epoch}")
    expect(election).to_have_count(1, timeout=FAILOVER_MS)
    expect(election).to_be_visible()
    expect(page.locator(f"#broker-{victim}")).to_have_attribute("data-alive", "false")
    expect(page.locator('li.event[data-kind="broker_lost"]').first).to_be_visible()
    expect(page.locator("#summary")).not_to_have_attribute("data-under-replicated", "0")
    # the internal topic's elections are on the timeline, but only with "show every event":
    # the broker, controller and leader events of the application's topics stay in view
    internal_elections = page.locator('li.event[data-kind="leader_elected"][data-topic="__consumer_offsets"]')
    expect(internal_elections).not_to_have_count(0, timeout=FAILOVER_MS)
    expect(internal_elections.first).to_be_hidden()
    expect(page.locator("li.event.internal:visible")).to_have_count(0)
    for kind in ("broker_lost", "controller_elected", "leader_elected"):
        expect(page.locator(f'li.event[data-kind="{kind}"]:not(.internal)').first).to_be_visible()
    page.check("#show-all-events")
    expect(internal_elections.first).to_be_visible()
    page.uncheck("#show-all-events")

    # new records go to the surviving replicas; the dead one's bar stays behind
    with Producer(f"127.0.0.1:{handle.brokers[controller]}", acks="all", linger_ms=1) as producer:
        for i in range(40):
            producer.send("orders", b"late-%d" % i, partition=victim_part.partition)
        producer.flush()
    hw = {0: 120, 1: 80, 2: 100}[victim_part.partition] + 40
    expect(r).to_have_attribute("data-hw", str(hw))
    expect(r.locator(f'.replica[data-broker-id="{new.leader}"]')).to_have_attribute("data-leo", str(hw))

    # the README's picture: the failover, a group with its lag, and records of the partition
    group = page.locator('tr.group[data-group="billing"]')
    expect(group.locator(".lag")).to_have_count(3, timeout=30_000)
    page.fill("#rec-limit", "8")
    r.locator("button.browse").click()
    expect(page.locator("#records-status")).to_have_attribute("data-state", "ok")
    expect(page.locator("#record-rows tr.record")).to_have_count(8)
    page.evaluate("window.scrollTo(0, 0)")
    # ... with the ports a user of `minikafka cluster up` sees, not this test's free ones
    page.route(STATE_ROUTE, with_default_ports)
    expect(page.locator(f"#broker-{controller} .endpoint:not(.kafka)")).to_contain_text(f":{9091 + controller}")
    expect(page.locator(".zk-server")).to_have_attribute("data-endpoint", "127.0.0.1:2181")
    shot = tmp_path / "dashboard.png"
    page.screenshot(path=str(shot), full_page=True)
    # a handler still answering a poll must not outlive the route (nor answer on a closed page)
    page.unroute_all(behavior="ignoreErrors")
    assert shot.stat().st_size > 10_000
    consumer.close()
    target = REPO / "docs" / "images" / "dashboard.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, target)


def test_dashboard_keeps_working_with_only_its_broker_alive(make_cluster, page):
    handle = make_cluster()
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("lonely", partitions=3, replication_factor=3)
        controller = admin.cluster().controller_id
    # serve the page from a broker that is not the controller, so the controller dies too
    serving = next(b for b in sorted(handle.brokers) if b != controller)
    port = handle.brokers[serving]
    page.goto(f"http://127.0.0.1:{port}/")
    expect(page.locator("tr.partition")).to_have_count(3)
    expect(page.locator("#connection")).to_have_attribute("data-state", "ok")

    others = [b for b in handle.brokers if b != serving]
    for b in others:
        handle.kill(b, "KILL")

    for b in others:
        expect(page.locator(f"#broker-{b}")).to_have_attribute("data-alive", "false", timeout=FAILOVER_MS)
    # the survivor becomes controller and leads every partition (it was in every ISR)
    expect(page.locator("#controller")).to_have_attribute("data-controller-id", str(serving), timeout=FAILOVER_MS)
    for p in range(3):
        expect(row(page, "lonely", p)).to_have_attribute("data-leader", str(serving), timeout=FAILOVER_MS)
        expect(row(page, "lonely", p)).to_have_attribute("data-offline", "false")
        expect(row(page, "lonely", p)).to_have_attribute("data-isr", str(serving))
    expect(page.locator('li.event[data-kind="controller_elected"]').filter(
        has_text=f"broker {serving} became controller")).to_have_count(1, timeout=FAILOVER_MS)

    # a fresh load of the page works and /api/state answers with the survivor alone
    page.reload()
    expect(page.locator("tr.partition")).to_have_count(3)
    expect(page.locator("#connection")).to_have_attribute("data-state", "ok")
    state = api_state(port)
    assert state["live_brokers"] == [serving]
    assert sorted(state["dead_brokers"]) == sorted(others)
    assert state["controller"]["id"] == serving
    assert state["summary"]["offline"] == 0
    assert state["summary"]["under_replicated"] == 3


def test_dashboard_shows_a_consumer_group_its_leader_and_lag(make_cluster, page):
    from minikafka import Consumer, TopicPartition

    handle = make_cluster()
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("views", partitions=2, replication_factor=3)
    with Producer(handle.bootstrap, acks="all", linger_ms=1) as producer:
        for p in (0, 1):
            for i in range(10):
                producer.send("views", b"v-%d" % i, partition=p)
        producer.flush()
    with Consumer(handle.bootstrap, group_id="watchers", auto_offset_reset="earliest", enable_auto_commit=False) as c:
        c.subscribe(["views"])
        wait_for(lambda: c.poll(timeout_ms=200) is not None and len(c.assignment()) == 2, timeout_s=60,
                 message="the consumer owning both partitions")
        c.commit({TopicPartition("views", 0): 4, TopicPartition("views", 1): 10})
        page.goto(f"http://127.0.0.1:{handle.brokers[min(handle.brokers)]}/")
        row = page.locator('tr.group[data-group="watchers"]')
        expect(row).to_have_attribute("data-state", "Stable", timeout=30_000)
        expect(row).to_have_attribute("data-members", "1")
        expect(row.locator(".member.leader")).to_have_count(1)
        expect(row.locator(".member.leader")).to_contain_text("views-0, views-1")
        expect(row.locator(".lag").filter(has_text="views-0: 6")).to_have_count(1)
        expect(row.locator(".lag").filter(has_text="views-1: 0")).to_have_count(1)
    # the consumer left: the group is empty, its offsets stay
    expect(row).to_have_attribute("data-state", "Empty", timeout=30_000)
    expect(row).to_have_attribute("data-members", "0")


def test_dashboard_follows_the_cluster_when_its_broker_dies(make_cluster, page):
    handle = make_cluster()
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("moving", partitions=1, replication_factor=3)
        controller = admin.cluster().controller_id
    served = next(b for b in sorted(handle.brokers) if b != controller)
    page.goto(f"http://127.0.0.1:{handle.brokers[served]}/")
    expect(page.locator("body")).to_have_attribute("data-serving-broker", str(served))
    expect(page.locator("tr.partition")).to_have_count(1)
    handle.kill(served, "KILL")
    # the page switches to another live broker and shows the failover from there
    expect(page.locator("body")).not_to_have_attribute("data-serving-broker", str(served), timeout=FAILOVER_MS)
    expect(page.locator("#connection")).to_have_attribute("data-state", "ok", timeout=FAILOVER_MS)
    expect(page.locator(f"#broker-{served}")).to_have_attribute("data-alive", "false", timeout=FAILOVER_MS)
    expect(row(page, "moving", 0)).not_to_have_attribute("data-leader", str(served), timeout=FAILOVER_MS)
    expect(page.locator('li.event[data-kind="broker_lost"]')).not_to_have_count(0, timeout=FAILOVER_MS)


def test_dashboard_flags_under_min_isr_and_shows_topic_configs(make_cluster, page):
    handle = make_cluster()
    with Admin(handle.bootstrap) as admin:
        controller = admin.cluster().controller_id
        victim = next(b for b in sorted(handle.brokers) if b != controller)
        # payments-0 lives on the victim and the controller: one broker less is under min ISR
        admin.create_topic("payments", partitions=1, replication_factor=2, assignment={0: [victim, controller]},
                           config={"min.insync.replicas": "2", "retention.ms": "86400000"})
        admin.create_topic("plain", partitions=1, replication_factor=3)
    page.goto(f"http://127.0.0.1:{handle.brokers[controller]}/")

    # the config panel: the overrides set at creation, and every effective value with its source
    topic = page.locator('tr.topic[data-topic="payments"]')
    expect(topic.locator('.override[data-config="min.insync.replicas"]')).to_have_attribute("data-value", "2")
    expect(topic.locator('.override[data-config="retention.ms"]')).to_have_attribute("data-value", "86400000")
    expect(topic.locator(".override")).to_have_count(2)
    expect(topic.locator("td.min-isr")).to_have_text("2")
    expect(page.locator('tr.topic[data-topic="plain"] .override')).to_have_count(0)
    topic.locator("details summary").click()
    retention = topic.locator('tr.config[data-config="retention.ms"]')
    expect(retention).to_be_visible()
    expect(retention).to_have_attribute("data-source", "topic")
    expect(topic.locator('tr.config[data-config="cleanup.policy"]')).to_have_attribute("data-value", "delete")
    expect(topic.locator('tr.config[data-config="cleanup.policy"]')).not_to_have_attribute("data-source", "topic")

    payments, plain = row(page, "payments", 0), row(page, "plain", 0)
    expect(payments).to_have_attribute("data-min-isr", "2")
    expect(payments).to_have_attribute("data-under-min-isr", "false")
    expect(plain).to_have_attribute("data-under-min-isr", "false")
    expect(page.locator("#summary")).to_have_attribute("data-under-min-isr", "0")
    expect(payments.locator(".flag.umi")).to_have_count(0)

    handle.kill(victim, "KILL")
    # the controller drops the dead broker from both ISRs: payments-0 is left with 1 < 2
    expect(payments).to_have_attribute("data-under-min-isr", "true", timeout=FAILOVER_MS)
    expect(payments).to_have_attribute("data-isr", str(controller))
    expect(payments.locator(".flag.umi")).to_be_visible()
    expect(page.locator("#summary")).to_have_attribute("data-under-min-isr", "1")
    expect(page.locator("#sum-umi")).to_have_text("1")
    expect(plain).to_have_attribute("data-under-replicated", "true", timeout=FAILOVER_MS)
    expect(plain).to_have_attribute("data-under-min-isr", "false")
    expect(page.locator('tr.topic[data-topic="payments"]')).to_have_attribute("data-under-min-isr", "1")


NON_ZERO = re.compile(r"^(0\.\d*[1-9]|[1-9])")


def test_dashboard_record_browser_and_rates(make_cluster, page):
    from minikafka import Consumer, TopicPartition

    handle = make_cluster()
    with Admin(handle.bootstrap) as admin:
        controller = admin.cluster().controller_id
        first = next(b for b in sorted(handle.brokers) if b != controller)
        third = next(b for b in sorted(handle.brokers) if b not in (controller, first))
        admin.create_topic("clicks", partitions=1, replication_factor=3, assignment={0: [first, controller, third]})
    before = describe(handle.bootstrap, "clicks").partitions[0]
    assert before.leader == first
    with Producer(handle.bootstrap, acks="all", linger_ms=1) as producer:
        for i in range(10):
            producer.send("clicks", b"click-%d" % i, key=b"user-%d" % i, partition=0)
        producer.flush()
    # a controlled shutdown moves the leadership at once: the next records get a new leader epoch
    handle.stop(first)
    bootstrap = f"127.0.0.1:{handle.brokers[controller]}"
    after = wait_for(lambda: (d := describe(bootstrap, "clicks").partitions[0]).leader not in (first, -1) and d,
                     timeout_s=FAILOVER_MS / 1000, message="a new leader for clicks-0")
    assert after.leader_epoch > before.leader_epoch
    with Producer(bootstrap, acks="all", linger_ms=1) as producer:
        for i in range(10, 20):
            producer.send("clicks", b"click-%d" % i, key=b"user-%d" % i, partition=0)
        producer.send("clicks", b"<b>\x00\xff</b>", key=None, partition=0)
        producer.flush()

    page.goto(f"http://127.0.0.1:{handle.brokers[controller]}/")
    r = row(page, "clicks", 0)
    expect(r).to_have_attribute("data-hw", "21")
    r.locator("button.browse").click()
    status = page.locator("#records-status")
    expect(status).to_have_attribute("data-state", "ok")
    records = page.locator("#record-rows tr.record")
    expect(records).to_have_count(20)
    expect(records.first).to_have_attribute("data-offset", "1")
    expect(records.last).to_have_attribute("data-offset", "20")
    for i in range(1, 21):
        rec = page.locator(f'#record-rows tr.record[data-offset="{i}"]')
        epoch = before.leader_epoch if i < 10 else after.leader_epoch
        expect(rec).to_have_attribute("data-leader-epoch", str(epoch))
        if i < 20:
            expect(rec.locator("td.key")).to_have_text(f"user-{i}")
            expect(rec.locator("td.value")).to_have_text(f"click-{i}")
    # null key, binary value shown as hex (never as markup)
    last = page.locator('#record-rows tr.record[data-offset="20"]')
    expect(last.locator("td.key")).to_have_text("null")
    expect(last.locator("td.value")).to_have_text("0x" + b"<b>\x00\xff</b>".hex())
    expect(last.locator("td.value b")).to_have_count(0)

    page.fill("#rec-limit", "5")
    page.click("#rec-show")
    expect(records).to_have_count(5)
    expect(records.first).to_have_attribute("data-offset", "16")

    # a bad request: Kafka's error name on the page, no rows
    page.fill("#rec-limit", "500")
    page.click("#rec-show")
    expect(status).to_have_attribute("data-state", "error")
    expect(status).to_have_attribute("data-error", "INVALID_REQUEST")
    expect(status).to_contain_text("limit must be an integer from 1 to 100")
    expect(records).to_have_count(0)

    # rates: zero at rest, then non-zero while a producer and a consumer run
    produce, fetch = r.locator("td.rate.produce"), r.locator("td.rate.fetch")
    expect(produce).to_have_attribute("data-records-per-s", "0")
    stop = threading.Event()

    def produce_loop() -> None:
        with Producer(bootstrap, acks="all", linger_ms=5) as producer:
            i = 0
            while not stop.is_set():
                producer.send("clicks", b"more-%d" % i, partition=0)
                i += 1
                if i % 20 == 0:
                    producer.flush()
                    stop.wait(0.05)

    def consume_loop() -> None:
        with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
            consumer.assign([TopicPartition("clicks", 0)])
            while not stop.is_set():
                consumer.poll(timeout_ms=200)

    threads = [threading.Thread(target=produce_loop, daemon=True), threading.Thread(target=consume_loop, daemon=True)]
    for t in threads:
        t.start()
    try:
        expect(produce).to_have_attribute("data-records-per-s", NON_ZERO, timeout=30_000)
        expect(produce).to_have_attribute("data-bytes-per-s", NON_ZERO, timeout=30_000)
        expect(fetch).to_have_attribute("data-records-per-s", NON_ZERO, timeout=30_000)
        expect(fetch).to_have_attribute("data-bytes-per-s", NON_ZERO, timeout=30_000)
        expect(produce).to_contain_text("rec/s")
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    # and back to zero once they stopped
    expect(produce).to_have_attribute("data-records-per-s", "0", timeout=30_000)


def test_dashboard_shows_an_open_transaction_its_lso_and_its_events(make_cluster, page):
    """An open transaction holds its partition's last stable offset below the HW: the
    dashboard shows the LSO under the HW and the transaction in its panel, and ``topics
    describe`` prints LastStableOffset; the commit brings the LSO to the HW and empties
    the panel.  The coordinator's begin, commit and abort events are on the timeline by
    default, the partitions' markers and __transaction_state's elections only with
    "show every event"."""
    handle = make_cluster(broker_configs={"transaction.state.log.num.partitions": "3"})
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("payments", partitions=2, replication_factor=3, config={"min.insync.replicas": "2"})
    with Producer(handle.bootstrap, acks="all", linger_ms=1) as producer:
        for i in range(10):
            producer.send("payments", b"plain-%d" % i, partition=0)
        producer.flush()
    page.goto(f"http://127.0.0.1:{handle.brokers[min(handle.brokers)]}/")
    r = row(page, "payments", 0)
    expect(r).to_have_attribute("data-hw", "10")
    expect(r).to_have_attribute("data-lso", "10")
    expect(r.locator("td.hw .lso")).to_have_count(0)
    expect(page.locator("tr.txn")).to_have_count(0)

    tid = "payments-writer"
    with Producer(handle.bootstrap, transactional_id=tid) as tx:
        tx.init_transactions()
        tx.begin_transaction()
        for i in range(5):
            tx.send("payments", b"in-txn-%d" % i, partition=0)
        tx.flush()
        # open: the records are below the HW, the LSO stays where the transaction began
        expect(r).to_have_attribute("data-hw", "15", timeout=30_000)
        expect(r).to_have_attribute("data-lso", "10")
        expect(r).to_have_attribute("data-open-transactions", "1")
        expect(r.locator("td.hw .lso")).to_have_text("LSO 10")
        expect(r.locator("td.topic .open-txns")).to_have_text("1 open transaction")
        expect(r.locator(".lsomark").first).to_be_visible()
        expect(row(page, "payments", 1).locator("td.hw .lso")).to_have_count(0)
        txn = page.locator(f'tr.txn[data-transactional-id="{tid}"]')
        expect(txn).to_have_attribute("data-state", "Ongoing", timeout=30_000)
        expect(txn).to_have_attribute("data-partitions", "payments-0")
        expect(txn).to_have_attribute("data-producer-epoch", "0")
        expect(page.locator("#transactions")).to_have_attribute("data-open", "1")
        begun = page.locator(f'li.event[data-kind="txn_begin"][data-transactional-id="{tid}"]')
        expect(begun).to_have_count(1, timeout=30_000)
        expect(begun).to_be_visible()
        expect(begun.locator(".kind")).to_contain_text("transaction begun")
        expect(begun).not_to_have_attribute("data-topic", re.compile(".+"))
        # the terminal view: Kafka's word for it, only where it differs from the HW
        bootstrap = f"127.0.0.1:{handle.brokers[min(handle.brokers)]}"
        done = run_cli("topics", "describe", "--topic", "payments", "--bootstrap-server", bootstrap)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert "\tHighWatermark: 15\tLastStableOffset: 10\t" in lines[1], lines
        assert "LastStableOffset" not in lines[2], lines

        tx.commit_transaction()
        # committed: the COMMIT marker took offset 15, the LSO is back at the HW
        expect(r).to_have_attribute("data-hw", "16", timeout=30_000)
        expect(r).to_have_attribute("data-lso", "16")
        expect(r.locator("td.hw .lso")).to_have_count(0)
        expect(r.locator("td.topic .open-txns")).to_have_count(0)
        expect(page.locator("tr.txn")).to_have_count(0)
        expect(page.locator("#transactions")).to_have_attribute("data-open", "0")
        expect(page.locator("#txn-idle")).to_contain_text("1 transactional id with none open")
        committed = page.locator(f'li.event[data-kind="txn_commit"][data-transactional-id="{tid}"]')
        expect(committed).to_be_visible(timeout=30_000)
        expect(committed.locator(".kind")).to_contain_text("transaction committed")
        done = run_cli("topics", "describe", "--topic", "payments", "--bootstrap-server", bootstrap)
        assert done.returncode == 0 and "LastStableOffset" not in done.stdout, done.stdout + done.stderr

        tx.begin_transaction()
        tx.send("payments", b"dropped", partition=1)
        tx.flush()
        expect(row(page, "payments", 1)).to_have_attribute("data-lso", "0", timeout=30_000)
        expect(row(page, "payments", 1).locator("td.hw .lso")).to_have_text("LSO 0")
        tx.abort_transaction()
    aborted = page.locator(f'li.event[data-kind="txn_abort"][data-transactional-id="{tid}"]')
    expect(aborted).to_be_visible(timeout=30_000)
    expect(aborted.locator(".kind")).to_contain_text("transaction aborted")
    expect(row(page, "payments", 1)).to_have_attribute("data-lso", "2", timeout=30_000)
    # the partitions' markers and the internal topic's events wait for "show every event"
    markers = page.locator('li.event[data-kind="txn_commit_marker"][data-topic="payments"]')
    expect(markers).to_have_count(1, timeout=30_000)
    expect(markers).to_be_hidden()
    expect(page.locator("li.event.internal:visible")).to_have_count(0)
    expect(page.locator('li.event[data-topic="__transaction_state"]')).not_to_have_count(0)
    page.check("#show-all-events")
    expect(markers).to_be_visible()
    expect(markers.locator(".kind")).to_contain_text("COMMIT marker written")


# Whatever is cut off or pushed out of its panel, per width: sections scrolled sideways,
# table cells whose content overflows, replica labels ("LEO 1027? · lag 40") cut short,
# and header cells past their panel's right edge.
CLIPPED = """() => {
  const out = [];
  for (const s of document.querySelectorAll("main section")) {
    if (s.scrollWidth > s.clientWidth + 1) out.push(`${s.id} scrolls sideways (${s.scrollWidth} > ${s.clientWidth})`);
    const right = s.getBoundingClientRect().right;
    for (const th of s.querySelectorAll("th")) {
      const edge = Math.min(right, window.innerWidth);
      if (th.offsetParent !== null && th.getBoundingClientRect().right > edge + 1) out.push(`${s.id}: ${th.textContent} past the edge`);
    }
  }
  for (const e of document.querySelectorAll(".replica .nums, td.rate, #groups td, #partitions td")) {
    if (e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1) out.push(`cut: ${e.textContent.trim()}`);
  }
  return out;
}"""


def test_dashboard_layout_fits_1280_to_1920_px(make_cluster, page):
    """At 1280, 1400 and 1920 px nothing of the page is cut: the Fetch column, the groups'
    Lag column and a stale replica's label with its lag are all in their panels."""
    from minikafka import Consumer, TopicPartition

    # the frozen follower below stays registered (a 30 s ZooKeeper session) past
    # replica.lag.time.max.ms (10 s), after which its lag is shown
    handle = make_cluster(broker_configs={"zookeeper.session.timeout.ms": "30000"})
    with Admin(handle.bootstrap) as admin:
        controller = admin.cluster().controller_id
        others = [b for b in sorted(handle.brokers) if b != controller]
        admin.create_topic("payments-settlement-events", partitions=2, replication_factor=3,
                           assignment={0: [controller, *others], 1: [controller, *reversed(others)]})
    with Producer(handle.bootstrap, acks="all", linger_ms=5) as producer:
        for i in range(3000):
            producer.send("payments-settlement-events", b"settled-%d" % i, partition=i % 2)
        producer.flush()
    group = "settlement-reconciliation-service"
    with Consumer(handle.bootstrap, group_id=group, client_id="reconciliation-worker-with-a-long-client-id",
                  auto_offset_reset="earliest", enable_auto_commit=False) as c:
        c.subscribe(["payments-settlement-events"])
        wait_for(lambda: c.poll(timeout_ms=200) is not None and len(c.assignment()) == 2, timeout_s=60,
                 message="the consumer owning both partitions")
        c.commit({TopicPartition("payments-settlement-events", 0): 20, TopicPartition("payments-settlement-events", 1): 7})
    # a frozen follower: its bar is labelled with the leader's last view of it and its lag
    frozen = others[-1]
    handle.kill(frozen, "STOP")
    try:
        with Producer(f"127.0.0.1:{handle.brokers[controller]}", acks=1, linger_ms=5) as producer:
            for i in range(40):
                producer.send("payments-settlement-events", b"late-%d" % i, partition=0)
            producer.flush()
        page.goto(f"http://127.0.0.1:{handle.brokers[controller]}/")
        stale = row(page, "payments-settlement-events", 0).locator(f'.replica[data-broker-id="{frozen}"] .nums')
        expect(stale).to_contain_text("?", timeout=30_000)
        # its lag shows once it is out of sync (replica.lag.time.max.ms without catching up)
        expect(stale).to_contain_text("lag 40", timeout=FAILOVER_MS)
        expect(page.locator(f'tr.group[data-group="{group}"] .lag')).to_have_count(2, timeout=30_000)
        expect(page.locator("#rec-partition")).to_have_value("0")
        for width in (1280, 1400, 1920):
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(600)  # a redraw at the new width
            assert page.evaluate(CLIPPED) == [], f"cut off at {width} px"
        # Show without choosing anything: the default partition 0 of the first topic
        page.click("#rec-show")
        expect(page.locator("#records-status")).to_have_attribute("data-state", "ok")
        expect(page.locator("#records-status")).to_contain_text("payments-settlement-events-0")
    finally:
        handle.resume(frozen)


# A page of another site: it tries what any page may do without asking the broker first
# (a text/plain POST, in no-cors mode: the answer is hidden but the request is sent),
# then a msgpack POST (the browser asks first: a CORS preflight) and a plain read of
# the record browser's JSON, and notes what happened.
ATTACK_PAGE = """<!doctype html><title>another site</title><script>
const BROKER = "http://127.0.0.1:%(port)d";
const BODY = new Uint8Array(%(body)s);
window.outcome = {};
(async () => {
  try {
    await fetch(BROKER + "/v1/delete_topics", {method: "POST", mode: "no-cors",
                headers: {"Content-Type": "text/plain"}, body: BODY});
    window.outcome.plain_post = "sent";
  } catch (e) { window.outcome.plain_post = "failed: " + e; }
  try {
    await fetch(BROKER + "/v1/delete_topics", {method: "POST", headers: {"Content-Type": "application/msgpack"},
                body: BODY});
    window.outcome.msgpack_post = "answered";
  } catch (e) { window.outcome.msgpack_post = "failed: " + e; }
  try {
    const resp = await fetch(BROKER + "/api/records?topic=%(topic)s&partition=0");
    window.outcome.records = await resp.text();
  } catch (e) { window.outcome.records = "failed: " + e; }
  window.outcome.done = true;
})();
</script>"""


def test_a_page_of_another_site_can_neither_delete_a_topic_nor_read_its_records(cluster, page):
    import http.server

    from minikafka.protocol.rpc import codec

    topic = "cross-site-target"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3)
    with Producer(cluster.bootstrap, acks="all") as producer:
        producer.send(topic, b"private-record", partition=0).result(30)
    port = next(iter(cluster.brokers.values()))
    wait_for(lambda: topic in {t["topic"] for t in api_state(port)["topics"]}, timeout_s=30,
             message="the broker knowing the topic")
    html = ATTACK_PAGE % {"port": port, "topic": topic,
                          "body": list(codec.pack({"topics": [topic], "timeout_ms": 0}))}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            data = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # another origin: another port
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        page.wait_for_function("() => window.outcome && window.outcome.done", timeout=30_000)
        outcome = page.evaluate("() => window.outcome")
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    # the browser sent the text/plain POST (only its answer is hidden from the page) ...
    assert outcome["plain_post"] == "sent", outcome
    # ... the msgpack one died at the preflight, and the read was not let through
    assert outcome["msgpack_post"].startswith("failed"), outcome
    assert outcome["records"].startswith("failed"), outcome
    # the topic and its record are still there
    with Admin(cluster.bootstrap) as admin:
        assert topic in admin.list_topics()
    from minikafka import Consumer, TopicPartition
    with Consumer(cluster.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        got = wait_for(lambda: consumer.poll(timeout_ms=500), timeout_s=30, message="the record")
    assert [r.value for r in got] == [b"private-record"]


def test_the_dashboard_on_a_sasl_listener_asks_for_a_user_and_works_with_one(playwright_driver, request,
                                                                              tmp_path_factory):
    """SASL on the HTTP listener and no authorizer: the page and the record browser want
    a user of sasl.users.file (HTTP Basic, as the msgpack API), and work with one."""
    import base64
    import urllib.error

    from process_helpers import cluster_fixture

    users = tmp_path_factory.mktemp("users") / "users.properties"
    users.write_text("alice=alice-secret\n")
    alice = {"security_protocol": "SASL_PLAINTEXT", "sasl_plain_username": "alice",
             "sasl_plain_password": "alice-secret"}
    handle = cluster_fixture(request, tmp_path_factory.mktemp("sasl-dashboard") / "minikafka", brokers=1,
                              client_options=alice, broker_configs={
                                  "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT",
                                  "sasl.users.file": str(users)})
    with Admin(handle.bootstrap, **alice) as admin:
        admin.create_topic("private", partitions=1, replication_factor=1)
    with Producer(handle.bootstrap, acks="all", **alice) as producer:
        producer.send("private", b"for-alice-only", partition=0).result(30)
    port = handle.brokers[1]

    # without a user the record browser answers 401, as a fetch without one is refused
    url = f"http://127.0.0.1:{port}/api/records?topic=private&partition=0"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, timeout=10)
    assert refused.value.code == 401 and refused.value.headers["WWW-Authenticate"].startswith("Basic")
    assert b"for-alice-only" not in refused.value.read()
    token = base64.b64encode(b"alice:alice-secret").decode()
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"Basic {token}"}),
                                timeout=10) as resp:
        assert [r["value"]["data"] for r in json.load(resp)["records"]] == ["for-alice-only"]

    chromium = playwright_driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    try:
        # a browser without a user to give when challenged is not let in
        anonymous = chromium.new_page()
        with pytest.raises(sync_api.Error, match="ERR_INVALID_AUTH_CREDENTIALS"):
            anonymous.goto(f"http://127.0.0.1:{port}/")
        # a browser given the user and password when challenged: the whole page works
        context = chromium.new_context(http_credentials={"username": "alice", "password": "alice-secret"})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"http://127.0.0.1:{port}/")
        expect(row(page, "private", 0)).to_have_attribute("data-hw", "1", timeout=30_000)
        expect(page.locator("#connection")).to_have_attribute("data-state", "ok")
        row(page, "private", 0).locator("button.browse").click()
        expect(page.locator("#records-status")).to_have_attribute("data-state", "ok")
        expect(page.locator("#record-rows tr.record")).to_have_count(1)
        expect(page.locator("#record-rows tr.record")).to_contain_text("for-alice-only")
        assert not errors, errors
    finally:
        chromium.close()


def test_the_page_moves_to_a_live_brokers_dashboard_when_its_broker_dies(cluster, page):
    """The page reads only the broker that served it (no cross-origin reads): when that
    broker dies it moves to the dashboard of another live broker and goes on there."""
    with Admin(cluster.bootstrap) as admin:
        controller = admin.cluster().controller_id
    serving = next(b for b in sorted(cluster.brokers) if b != controller)
    page.goto(f"http://127.0.0.1:{cluster.brokers[serving]}/")
    expect(page.locator("#connection")).to_have_attribute("data-state", "ok")
    expect(page.locator("body")).to_have_attribute("data-serving-broker", str(serving))
    others = {f"http://127.0.0.1:{port}/" for b, port in cluster.brokers.items() if b != serving}
    cluster.kill(serving, "KILL")
    try:
        page.wait_for_url(lambda url: url in others, timeout=FAILOVER_MS)
        moved_to = next(b for b, port in cluster.brokers.items() if page.url == f"http://127.0.0.1:{port}/")
        expect(page.locator("#connection")).to_have_attribute("data-state", "ok", timeout=FAILOVER_MS)
        expect(page.locator("body")).to_have_attribute("data-serving-broker", str(moved_to))
        expect(page.locator(f"#broker-{serving}")).to_have_attribute("data-alive", "false", timeout=FAILOVER_MS)
    finally:
        cluster.start(serving)


def test_a_dead_replica_reads_dead_on_every_partition(make_cluster, page):
    handle = make_cluster()
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("deadview", partitions=3, replication_factor=3)
        controller = admin.cluster().controller_id
    with Producer(handle.bootstrap, acks="all") as producer:
        for p in range(3):
            for i in range(20):
                producer.send("deadview", b"r%d" % i, partition=p)
        producer.flush()
    victim = next(b for b in sorted(handle.brokers) if b != controller)
    page.goto(f"http://127.0.0.1:{handle.brokers[controller]}/")
    for p in range(3):  # the leaders know every follower's LEO
        expect(row(page, "deadview", p).locator(f'.replica[data-broker-id="{victim}"] .nums')).to_have_text("LEO 20")
    handle.kill(victim, "KILL")
    expect(page.locator(f"#broker-{victim}")).to_have_attribute("data-alive", "false", timeout=FAILOVER_MS)
    for p in range(3):  # not "LEO 20?" here and "dead" there: one word
        expect(row(page, "deadview", p).locator(f'.replica[data-broker-id="{victim}"] .nums')).to_have_text("dead")


# Every lag label the partition table ever shows, noted as it is drawn (broker, whether the
# replica is in the ISR, and the label), and how often an in-ISR replica was drawn behind
# the leader's LEO.
WATCH_LAG_LABELS = """() => {
  window.lagLabels = [];
  window.inFlight = 0;
  const note = () => {
    for (const r of document.querySelectorAll("#partition-rows .replica")) {
      const label = r.querySelector(".nums .lag");
      if (label) window.lagLabels.push(`b${r.dataset.brokerId} in ISR ${r.dataset.inIsr}: ${label.textContent}`);
      if (r.dataset.inIsr === "true" && Number(r.dataset.lag) > 0) window.inFlight += 1;
    }
  };
  new MutationObserver(note).observe(document.getElementById("partition-rows"), { childList: true, subtree: true });
}"""


def test_an_in_sync_follower_a_fetch_behind_shows_no_lag_and_a_stopped_one_does(make_cluster, page):
    """Under a steady acks=all producer a follower is often a fetch behind the leader (the
    records in flight): it is in sync, and no lag is shown for it.  A stopped follower
    shows its lag (red) once it is out of sync by Kafka's rule: not caught up to the
    leader's LEO within replica.lag.time.max.ms (10 s; its ZooKeeper session, 30 s here,
    keeps it registered meanwhile)."""
    handle = make_cluster(broker_configs={"zookeeper.session.timeout.ms": "30000"})
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("steady", partitions=3, replication_factor=3)
        controller = admin.cluster().controller_id
    stop = threading.Event()

    def produce() -> None:
        with Producer(handle.bootstrap, acks="all", linger_ms=0) as producer:
            i = 0
            while not stop.is_set():
                producer.send("steady", b"s%d" % i, partition=i % 3)
                i += 1
                stop.wait(0.003)

    producing = threading.Thread(target=produce, daemon=True)
    producing.start()
    try:
        serving = next(b for b in sorted(handle.brokers) if b != controller)
        page.goto(f"http://127.0.0.1:{handle.brokers[serving]}/")
        expect(page.locator('tr.partition[data-topic="steady"] td.rate.produce:not([data-records-per-s=""])'
                            ':not([data-records-per-s="0"])')).to_have_count(3, timeout=30_000)
        page.evaluate(WATCH_LAG_LABELS)
        # until in-sync followers were drawn a fetch behind a few times (often, under this load)
        page.wait_for_function("window.inFlight >= 5", timeout=60_000, polling=200)
        assert page.evaluate("window.lagLabels") == [], "a lag shown for an in-sync follower"
        expect(page.locator("#partition-rows .replica .nums .lag")).to_have_count(0)
    finally:
        stop.set()
        producing.join(timeout=30)
    leader = describe(handle.bootstrap, "steady").partitions[0].leader
    frozen = next(b for b in sorted(handle.brokers) if b != leader)
    handle.kill(frozen, "STOP")
    try:
        with Producer(f"127.0.0.1:{handle.brokers[leader]}", acks=1, linger_ms=5) as producer:
            for i in range(30):
                producer.send("steady", b"late-%d" % i, partition=0)
            producer.flush()
        page.goto(f"http://127.0.0.1:{handle.brokers[leader]}/")
        stale = row(page, "steady", 0).locator(f'.replica[data-broker-id="{frozen}"]')
        expect(stale.locator(".nums")).to_contain_text("?", timeout=30_000)
        # out of sync after replica.lag.time.max.ms (10 s): its lag is shown, in red
        expect(stale.locator(".nums .lag")).to_contain_text("lag", timeout=FAILOVER_MS)
        expect(stale).to_have_attribute("data-behind", "true")
    finally:
        handle.resume(frozen)


def test_opened_topic_settings_stay_in_their_panel_at_1280_to_1920_px(cluster, page):
    """Opening a topic's list of effective settings (names up to 40 characters, values such
    as 9223372036854775807) keeps every column, source included, inside the topics panel:
    nothing pushed under the timeline beside it."""
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("settings-layout", partitions=1, replication_factor=3,
                           config={"min.insync.replicas": "2", "retention.ms": "86400000"})
    page.goto(f"http://127.0.0.1:{cluster.brokers[1]}/")
    details = page.locator('details.configs[data-topic="settings-layout"]')
    expect(details.locator("summary")).to_contain_text(" settings", timeout=30_000)
    details.locator("summary").click()  # the page asks for every setting of an opened list
    expect(details.locator("tr.config")).not_to_have_count(0)
    expect(details.locator('tr.config[data-config="follower.replication.throttled.replicas"]')).to_be_visible()
    for width in (1280, 1400, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(600)  # a redraw at the new width
        outside = page.evaluate("""() => {
          const panel = document.getElementById("topics-section").getBoundingClientRect();
          const timeline = document.getElementById("events-section").getBoundingClientRect();
          const edge = Math.min(panel.right, timeline.left);
          return [...document.querySelectorAll("#topics td")].filter((td) => td.offsetParent !== null)
            .filter((td) => td.getBoundingClientRect().right > edge + 1)
            .map((td) => `${td.textContent.slice(0, 40)} ends at ${td.getBoundingClientRect().right} > ${edge}`);
        }""")
        assert outside == [], f"at {width} px: {outside[:5]}"
        assert page.evaluate(CLIPPED) == [], f"cut off at {width} px"
    page.set_viewport_size({"width": 1400, "height": 900})


# For every number cell (td.num) of a table's first shown row: where its text ends, and
# where its column header's text ends (both right-aligned: the same place).
NUMBER_ALIGNMENT = """(table) => {
  const textRight = (cell) => {
    const node = [...cell.childNodes].find((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
    const range = document.createRange();
    range.selectNodeContents(node || cell);
    return range.getBoundingClientRect().right;
  };
  const row = [...document.querySelectorAll(`${table} tbody tr`)].find((r) => r.offsetParent !== null && !r.classList.contains("empty"));
  const heads = document.querySelectorAll(`${table} thead th`);
  return [...row.children].filter((td) => td.classList.contains("num"))
    .map((td) => ({ header: heads[td.cellIndex].textContent.trim(), cell: td.textContent.trim(),
                    off: Math.round(textRight(heads[td.cellIndex]) - textRight(td)) }));
}"""


def test_record_browser_numbers_are_right_aligned_under_their_headers(cluster, page):
    """The record browser's offsets and leader epochs, and the numbers of the partitions and
    topics tables, are right-aligned under their right-aligned headers."""
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("aligned", partitions=1, replication_factor=3)
    with Producer(cluster.bootstrap, acks="all") as producer:
        for i in range(12):
            producer.send("aligned", b"value-%d" % i, key=b"key-%d" % i, partition=0)
        producer.flush()
    page.goto(f"http://127.0.0.1:{cluster.brokers[1]}/")
    expect(row(page, "aligned", 0)).to_have_attribute("data-hw", "12", timeout=30_000)
    page.select_option("#rec-topic", "aligned")
    page.click("#rec-show")
    expect(page.locator("#records-status")).to_have_attribute("data-state", "ok")
    expect(page.locator("tr.record")).to_have_count(12)
    for table in ("#records", "#partitions", "#topics"):
        columns = page.evaluate(NUMBER_ALIGNMENT, table)
        assert columns, f"no number column in {table}"
        misaligned = [c for c in columns if abs(c["off"]) > 2]
        assert misaligned == [], f"{table}: numbers not under their headers: {misaligned}"


def test_dashboard_pages_and_filters_many_partitions_and_shows_a_failover_first(make_cluster, page):
    """Hundreds of partitions: the summary counts them all while the table holds one page,
    the pager and the topic filter ask the broker for other rows, and a partition whose
    leader was killed comes first as a problem row, though its topic sorts last."""
    handle = make_cluster()
    with Admin(handle.bootstrap) as admin:
        controller = admin.cluster().controller_id
        victim = next(b for b in sorted(handle.brokers, reverse=True) if b != controller)
        others = [b for b in sorted(handle.brokers) if b != victim]
        for i in range(4):  # 400 partitions away from the victim: they stay healthy
            admin.create_topic(f"bulk-{i}", partitions=100, replication_factor=2,
                               assignment={p: others if p % 2 else others[::-1] for p in range(100)})
        admin.create_topic("zz-failover", partitions=1, replication_factor=3,
                           assignment={0: [victim] + others})
    serving = others[0]
    port = handle.brokers[serving]

    # the JSON: every partition counted, one page of rows
    state = wait_for(lambda: (s := api_state_of(port, "limit=100&internal=0"))["summary"]["partitions"] == 401 and s,
                     30, message="401 partitions in the summary")
    assert len(state["partitions"]) == 100 and state["page"]["matching"] == 401
    assert state["partitions"][0]["topic"] == "bulk-0" and state["partitions"][0]["partition"] == 0
    bulk = {t["topic"]: t for t in state["topics"]}["bulk-1"]
    assert bulk["partitions"] == 100 and sum(bulk["leaders"].values()) == 100

    page.goto(f"http://127.0.0.1:{port}/")
    rows = page.locator("tr.partition")
    expect(page.locator("#summary")).to_have_attribute("data-partitions", "401", timeout=30_000)
    expect(rows).to_have_count(100)
    expect(page.locator("#partition-pager")).to_have_attribute("data-matching", "401")
    expect(page.locator("#page-info")).to_contain_text("1–100 of 401 partitions")
    expect(page.locator('tr.topic[data-topic="bulk-2"]')).to_have_attribute("data-partitions", "100")

    # the pager: the second page begins at the 101st partition (bulk-1's first)
    page.click("#page-next")
    expect(rows.first).to_have_attribute("data-topic", "bulk-1")
    expect(rows.first).to_have_attribute("data-partition", "0")
    expect(page.locator("#page-info")).to_contain_text("101–200 of 401")
    page.select_option("#page-size", "250")  # a new page size starts again from the first row
    expect(rows).to_have_count(250)
    expect(rows.first).to_have_attribute("data-topic", "bulk-0")

    # the filter: a pattern, then a topic's own button
    page.fill("#topic-filter", "bulk-[23]")
    expect(page.locator("#partition-pager")).to_have_attribute("data-matching", "200")
    expect(rows.first).to_have_attribute("data-topic", "bulk-2")
    expect(page.locator("tr.topic")).to_have_count(2)
    page.fill("#topic-filter", "")
    page.locator('tr.topic[data-topic="zz-failover"] button.only').click()
    expect(page.locator("#topic-filter")).to_have_value("zz-failover")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-leader", str(victim))
    page.check("#problems-only")
    expect(rows).to_have_count(0)
    expect(page.locator("#partition-rows tr.empty")).to_contain_text("no offline or under-replicated partition")
    page.uncheck("#problems-only")
    page.fill("#topic-filter", "")
    expect(rows).to_have_count(250)
    expect(rows.first).to_have_attribute("data-topic", "bulk-0")

    # kill the leader of zz-failover-0: its row comes first, flagged, the others unchanged
    handle.kill(victim, "KILL")
    first = rows.first
    expect(first).to_have_attribute("data-topic", "zz-failover", timeout=FAILOVER_MS)
    expect(first).to_have_attribute("data-under-replicated", "true", timeout=FAILOVER_MS)
    expect(first.locator(".flag")).not_to_have_count(0)
    expect(page.locator("#page-info")).to_contain_text("1 with problems first")
    expect(page.locator("#summary")).to_have_attribute("data-under-replicated", "1")
    expect(page.locator('tr.topic[data-topic="zz-failover"]')).to_have_attribute("data-under-replicated", "1")
    expect(rows.nth(1)).to_have_attribute("data-topic", "bulk-0")
    page.check("#problems-only")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-topic", "zz-failover")
    expect(rows.first).not_to_have_attribute("data-leader", str(victim), timeout=FAILOVER_MS)


def api_state_of(port: int, query: str) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state?{query}", timeout=10) as resp:
        return json.load(resp)
