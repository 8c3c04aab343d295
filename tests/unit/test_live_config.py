"""A dynamic broker config change makes a new BrokerConfig and leaves the old one as it
was; the services holding the broker's LiveConfig read the new value."""
from __future__ import annotations

import asyncio
import dataclasses
import time
from types import SimpleNamespace

import pytest

from minikafka.broker.config_changes import ConfigChangeListener
from minikafka.broker.metrics import Metrics
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.settings import (BrokerSettings, FetcherSettings, GroupCoordinatorSettings, ReplicaSettings,
                                       SecuritySettings, TopicAdminSettings, TxnCoordinatorSettings)
from minikafka.broker.storage import Storage
from minikafka.broker.topic_admin import SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT, TopicAdmin
from minikafka.config import BROKER_CONFIGS, BrokerConfig, LiveConfig
from minikafka.controller.settings import ControllerSettings
from minikafka.zk import layout


def test_with_dynamic_makes_a_new_value_and_leaves_the_old_one_as_it_was():
    old = BrokerConfig(1, "zk", settings={"min.insync.replicas": "2"})
    new, changed = old.with_dynamic({"min.insync.replicas": "3", "log.retention.ms": "bad"},
                                    {"unclean.leader.election.enable": "true", "num.partitions": "9"})
    # only valid dynamic settings count: a bad value and a static setting are skipped
    assert changed == {"min.insync.replicas": 3, "unclean.leader.election.enable": True}
    assert (new.get("min.insync.replicas"), new.unclean_leader_election_enable, new.num_partitions) == (3, True, 1)
    assert dict(new.dynamic_sources) == {"min.insync.replicas": "dynamic_default",
                                         "unclean.leader.election.enable": "dynamic_broker"}
    assert (old.get("min.insync.replicas"), old.unclean_leader_election_enable) == (2, False)
    assert dict(old.dynamic_sources) == {} and {k: dict(v) for k, v in old.dynamic_layers.items()} == {
        "dynamic_default": {}, "dynamic_broker": {}}
    assert new.static is old.static and new.explicit == old.explicit == {"min.insync.replicas"}
    # back to no dynamic configs: the static value again
    again, changed = new.with_dynamic({}, {})
    assert again.get("min.insync.replicas") == 2 and changed == {"min.insync.replicas": 2,
                                                                  "unclean.leader.election.enable": False}


@pytest.mark.parametrize("mapping", ["settings", "static", "dynamic_sources", "dynamic_layers"])
def test_a_configs_mappings_are_read_only(mapping):
    config, _ = BrokerConfig(1, "zk").with_dynamic({"min.insync.replicas": "2"}, {})
    with pytest.raises(TypeError):
        getattr(config, mapping)["min.insync.replicas"] = 5
    with pytest.raises(AttributeError):  # frozen
        setattr(config, mapping, {})


def test_a_dynamic_layer_is_read_only():
    config, _ = BrokerConfig(1, "zk").with_dynamic({"min.insync.replicas": "2"}, {})
    with pytest.raises(TypeError):
        config.dynamic_layers["dynamic_default"]["min.insync.replicas"] = "5"


class _ConfigZk:
    """The two broker config znodes a ConfigChangeListener reads."""

    def __init__(self) -> None:
        self.nodes: dict[str, bytes] = {}

    def set(self, entity: str, settings: dict[str, str]) -> None:
        self.nodes[layout.broker_config_path(entity)] = layout.encode_topic_config(settings)

    async def get(self, path: str):
        return (self.nodes[path], None) if path in self.nodes else None


def test_a_dynamic_change_reaches_the_services_holding_the_live_config(tmp_path):
    started = BrokerConfig(1, "zk", settings={"min.insync.replicas": "1"})
    live = LiveConfig(started)
    events: list[str] = []
    told: list[bool] = []
    rm = ReplicaManager(live, SimpleNamespace(time=time.time, monotonic=time.monotonic), Storage(str(tmp_path), 1),
                        None, Metrics(), lambda kind, text, **kw: events.append(kind))
    admin = TopicAdmin(live, None, None, None, lambda: "")
    zk = _ConfigZk()
    listener = ConfigChangeListener(live, zk, rm, rm.record_event, lambda topic, config: None, lambda: told.append(True))
    zk.set(layout.BROKER_DEFAULT_ENTITY, {"min.insync.replicas": "2", "log.cleanup.policy": "compact"})
    zk.set("1", {"min.insync.replicas": "3"})
    asyncio.run(listener.load_broker_configs())

    assert live.current is not started and started.get("min.insync.replicas") == 1  # a new value, the old kept
    assert rm.config is live.current and rm.setting("t", "min.insync.replicas") == 3
    assert rm.setting("t", "cleanup.policy") == "compact"
    described = {e.name: e for e in admin.describe_broker("1")}
    assert (described["min.insync.replicas"].value, described["min.insync.replicas"].source) == (
        "3", SOURCE_DYNAMIC_BROKER)
    assert described["log.cleanup.policy"].source == SOURCE_DYNAMIC_DEFAULT
    assert told == [True] and events == ["broker_config_loaded"]

    # the same znodes again: nothing changed, nobody is told
    asyncio.run(listener.load_broker_configs())
    assert told == [True]


def test_a_view_is_built_once_per_config_value_and_again_after_a_dynamic_change(tmp_path):
    live = LiveConfig(BrokerConfig(1, "zk", settings={"producer.id.expiration.ms": "1000"}))
    rm = ReplicaManager(live, SimpleNamespace(time=time.time, monotonic=time.monotonic), Storage(str(tmp_path), 1),
                        None, Metrics(), lambda kind, text, **kw: None)
    first = live.view(ReplicaSettings)
    assert live.view(ReplicaSettings) is first and rm.settings is first and first.producer_id_expiration_ms == 1000
    live.update({"producer.id.expiration.ms": "5000"}, {})
    assert rm.settings is not first and rm.settings.producer_id_expiration_ms == 5000
    assert first.producer_id_expiration_ms == 1000  # the old view, as the old config, unchanged
    live.current = BrokerConfig(1, "zk")  # a value put in place directly is seen too
    assert rm.settings.producer_id_expiration_ms == 86400000


VIEWS = [BrokerSettings, ControllerSettings, FetcherSettings, GroupCoordinatorSettings, ReplicaSettings,
         SecuritySettings, TopicAdminSettings, TxnCoordinatorSettings]


@pytest.mark.parametrize("kind", VIEWS, ids=lambda k: k.__name__)
def test_each_field_of_a_view_is_the_setting_of_its_name(kind):
    # every whole-number setting at a value of its own, so that no field reads another's
    ints = [c for c in BROKER_CONFIGS if c.parse is int]
    config = BrokerConfig(1, "zk", settings={c.name: str(5000 + i) for i, c in enumerate(ints)})
    view = kind.of(config)
    by_attr = {c.attr: c.name for c in BROKER_CONFIGS}
    for f in dataclasses.fields(view):
        assert f.name in by_attr, f"{kind.__name__}.{f.name} names no broker setting"
        value = getattr(view, f.name)
        assert getattr(value, "value", value) == config.get(by_attr[f.name]), f.name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(view, dataclasses.fields(view)[0].name, None)
