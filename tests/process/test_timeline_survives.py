"""The cluster's event timeline outlives the broker that recorded it: every broker keeps
the events it pulls from the others, so after the controller that handled a failover is
killed, the live brokers' /api/events, and the msgpack ``events`` API with ``cluster``,
still show that failover (and the first dead broker's last events), whether or not a
dashboard was open meanwhile."""
from __future__ import annotations

import json
import urllib.request

import pytest

from minikafka import Admin
from process_helpers import wait_for
from replica_checks import post

pytestmark = pytest.mark.process


def get(port: int, path: str) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
        return json.load(resp)


def own_events(handle, broker_id: int) -> list[dict]:
    """A broker's own timeline (the msgpack events API, which pulls nothing from the others)."""
    return post(handle.brokers[broker_id], "events", {"since": 0, "cluster": False, "limit": 5000},
                timeout_s=5.0)["events"]


def test_a_failover_stays_on_the_timeline_after_the_controller_dies(make_cluster):
    c = make_cluster(brokers=3)
    controller = wait_for(lambda: get(c.brokers[1], "/api/state")["controller"]["id"] in (1, 2, 3)
                          and get(c.brokers[1], "/api/state")["controller"]["id"], 30, message="a controller")
    first, survivor = [b for b in (1, 2, 3) if b != controller]
    with Admin(c.bootstrap) as admin:  # the first victim leads a partition: it has events of its own
        admin.create_topic("timeline", partitions=1, replication_factor=2, assignment={0: [first, survivor]})
    last = wait_for(lambda: own_events(c, first), 30, 0.2, f"broker {first}'s own events")[-1]
    wait_for(lambda: get(c.brokers[survivor], "/api/state")["timeline"]["held"].get(str(first), 0) >= last["ts"],
             30, 0.2, f"broker {survivor} to hold broker {first}'s events")
    c.kill(first)
    lost = wait_for(lambda: [e for e in own_events(c, controller) if e["kind"] == "broker_lost"
                             and f"broker {first} is gone" in e["text"]], 30, 0.2,
                    f"controller {controller} to record broker {first}'s loss")[0]
    # the survivor pulls the others' events by itself (nobody asked its /api/events yet)
    wait_for(lambda: get(c.brokers[survivor], "/api/state")["timeline"]["held"].get(str(controller), 0) >= lost["ts"],
             30, 0.2, f"broker {survivor} to hold controller {controller}'s events")
    c.kill(controller)

    events = get(c.brokers[survivor], "/api/events?since=0&limit=5000")["events"]
    kept = [e for e in events if e["broker"] == controller and e["kind"] == "broker_lost"]
    assert [e["text"] for e in kept if f"broker {first} is gone" in e["text"]], \
        f"the first failover, recorded by the dead controller {controller}, is still shown"
    assert last in [{k: e[k] for k in last} for e in events if e["broker"] == first], \
        f"the first dead broker {first}'s last event too"
    held = get(c.brokers[survivor], "/api/state")["timeline"]["held"]
    assert set(held) == {"1", "2", "3"}, held
    # the msgpack events API with cluster=true answers from the same held timeline
    merged = post(c.brokers[survivor], "events", {"since": 0, "cluster": True, "limit": 5000}, timeout_s=5.0)["events"]
    assert [e for e in merged if e["broker"] == controller and e["kind"] == "broker_lost"
            and f"broker {first} is gone" in e["text"]], merged[-20:]
    assert last in merged, f"broker {first}'s last event in the msgpack answer too"
    assert [e["ts"] for e in merged] == sorted(e["ts"] for e in merged)
