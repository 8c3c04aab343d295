"""Topic ids (KIP-516): their text form, their drawing, and /brokers/topics/T as Kafka
3.9 stores them (TopicZNode version 3), including a version 1 znode of an older cluster."""
from __future__ import annotations

import json
import random
import uuid

import pytest

from minikafka.protocol import topic_ids
from minikafka.protocol.topic_ids import ONE_TOPIC_ID, ZERO_TOPIC_ID
from minikafka.zk import layout


def test_text_form_is_kafkas_base64url_without_padding():
    # Kafka: new Uuid(0x1234567890abcdefL, 0xfedcba0987654321L).toString() == "EjRWeJCrze_-3LoJh2VDIQ"
    raw = bytes.fromhex("1234567890abcdeffedcba0987654321")
    assert topic_ids.encode_topic_id(raw) == "EjRWeJCrze_-3LoJh2VDIQ"
    assert topic_ids.decode_topic_id("EjRWeJCrze_-3LoJh2VDIQ") == raw
    assert topic_ids.encode_topic_id(bytes(16)) == ZERO_TOPIC_ID
    assert topic_ids.encode_topic_id(bytes(15) + b"\x01") == ONE_TOPIC_ID
    assert topic_ids.to_uuid("EjRWeJCrze_-3LoJh2VDIQ") == uuid.UUID(bytes=raw)
    assert topic_ids.from_uuid(uuid.UUID(bytes=raw)) == "EjRWeJCrze_-3LoJh2VDIQ"
    assert topic_ids.from_uuid(None) == ZERO_TOPIC_ID


@pytest.mark.parametrize("bad", ["", "abc", "EjRWeJCrze_-3LoJh2VDI", "EjRWeJCrze_-3LoJh2VDIQ=", "EjRWeJCrze_+3LoJh2VDIQ",
                                 "EjRWeJCrze_-3LoJh2VDIR", "EjRWeJCrze_-3LoJh2VD!Q", 12, None])
def test_malformed_text_is_refused(bad):
    assert not topic_ids.is_topic_id(bad)
    with pytest.raises(ValueError):
        topic_ids.decode_topic_id(bad)


def test_new_ids_are_version_4_uuids_never_reserved_nor_dash_led():
    rng = random.Random(7)
    drawn = [topic_ids.new_topic_id(lambda: rng.getrandbits(128)) for _ in range(2000)]
    assert len(set(drawn)) == len(drawn)
    for text in drawn:
        u = topic_ids.to_uuid(text)
        assert u.version == 4 and u.variant == uuid.RFC_4122
        assert text not in (ZERO_TOPIC_ID, ONE_TOPIC_ID) and not text.startswith("-")


def test_draws_that_give_a_reserved_or_dash_led_id_are_drawn_again():
    dash = int.from_bytes(topic_ids.decode_topic_id("-" + "A" * 21), "big")  # starts with '-' after the v4 bits too
    assert topic_ids.encode_topic_id(uuid.UUID(int=dash, version=4).bytes).startswith("-")
    draws = iter([dash, 5])
    text = topic_ids.new_topic_id(lambda: next(draws))
    assert text == topic_ids.encode_topic_id(uuid.UUID(int=5, version=4).bytes)


def test_topic_znode_is_kafkas_version_3():
    data = layout.encode_assignment({1: [2, 3], 0: [1, 2]}, "EjRWeJCrze_-3LoJh2VDIQ")
    assert json.loads(data) == {"version": 3, "topic_id": "EjRWeJCrze_-3LoJh2VDIQ",
                                "partitions": {"0": [1, 2], "1": [2, 3]}, "adding_replicas": {}, "removing_replicas": {}}
    assert layout.TopicZnode.decode(data) == layout.TopicZnode({0: [1, 2], 1: [2, 3]}, "EjRWeJCrze_-3LoJh2VDIQ")


def test_topic_znode_lists_only_moving_partitions_in_adding_and_removing():
    znode = layout.TopicZnode({0: [3, 4, 1, 2], 1: [2, 3]}, "EjRWeJCrze_-3LoJh2VDIQ", {0: [3, 4], 1: []}, {0: [1, 2]})
    d = json.loads(znode.encode())
    assert d["adding_replicas"] == {"0": [3, 4]} and d["removing_replicas"] == {"0": [1, 2]}
    assert layout.TopicZnode.decode(znode.encode()).adding == {0: [3, 4]}


def test_a_version_1_znode_of_an_older_cluster_reads_without_an_id():
    old = b'{"version":1,"partitions":{"0":[1,2,3],"1":[2,3,1]}}'
    znode = layout.TopicZnode.decode(old)
    assert znode == layout.TopicZnode({0: [1, 2, 3], 1: [2, 3, 1]}, None, {}, {})
    assert layout.decode_assignment(old) == {0: [1, 2, 3], 1: [2, 3, 1]}
    # the upgrade: written back with the id the controller assigned, as version 3
    upgraded = json.loads(layout.TopicZnode(znode.partitions, "EjRWeJCrze_-3LoJh2VDIQ").encode())
    assert upgraded["version"] == 3 and upgraded["topic_id"] == "EjRWeJCrze_-3LoJh2VDIQ"


def test_a_malformed_topic_id_in_the_znode_is_refused():
    with pytest.raises(ValueError):
        layout.TopicZnode.decode(b'{"version":3,"partitions":{"0":[1]},"topic_id":"nope"}')
