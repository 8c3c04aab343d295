"""minikafka's znodes in the versions Apache Kafka 3.9 (ZooKeeper mode) writes them, so that
Kafka's tools and a ZooKeeper tree compared with Kafka's read the same (docs/fidelity.md)."""
from __future__ import annotations

import json

from minikafka.zk import layout


def test_controller_znode_is_version_2_with_no_kraft_controller_epoch():
    assert json.loads(layout.encode_controller(3, 0)) == {
        "version": 2, "brokerid": 3, "timestamp": "0", "kraftControllerEpoch": -1}
    assert layout.decode_controller(layout.encode_controller(3, 0)) == 3


def test_broker_registration_is_version_5_with_an_empty_features_map():
    info = layout.BrokerInfo(2, "127.0.0.1", 9093, kafka=("127.0.0.1", 29093), storage="memory")
    data = json.loads(info.encode(1000))
    assert (data["version"], data["features"]) == (5, {})
    assert data["endpoints"] == ["PLAINTEXT://127.0.0.1:29093", "MINIKAFKA://127.0.0.1:9093"]
    assert layout.BrokerInfo.decode(2, info.encode(1000)) == info


def test_feature_znode_and_config_ips_exist_as_kafka_creates_them():
    assert json.loads(layout.encode_feature()) == {"version": 2, "status": 1, "features": {}}
    assert "/config/ips" in layout.PERSISTENT_PATHS
