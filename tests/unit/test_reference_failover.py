"""The failover scenario's pure part: Kafka's tools' output normalized by role, the columns
two outputs differ in, and which differences docs/fidelity.md explains."""
from __future__ import annotations

from minikafka.reference import failover, fidelity

TOPICS = ("Topic: failover\tTopicId: Xy12\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: min.insync.replicas=2\n"
          "\tTopic: failover\tPartition: 0\tLeader: 3\tReplicas: 3,1,2\tIsr: 2,3\tElr: N/A\tLastKnownElr: N/A\n")
GROUPS = ("\nConsumer group 'g' has no active members.\n\n"
          "GROUP  TOPIC     PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID\n"
          "g      failover  0          201             201             0    -            -     -\n")


def test_topic_describe_names_brokers_by_role_and_masks_the_topic_id():
    rows = failover.topic_describe(TOPICS, {3: "A", 1: "B", 2: "C"})
    assert rows == [
        {"Topic": "failover", "TopicId": "<id>", "PartitionCount": "1", "ReplicationFactor": "3",
         "Configs": "min.insync.replicas=2"},
        {"Topic": "failover", "Partition": "0", "Leader": "A", "Replicas": "A,B,C", "Isr": "C,A", "Elr": "N/A",
         "LastKnownElr": "N/A"}]
    assert failover.topic_describe(TOPICS.replace("Leader: 3", "Leader: none"), {3: "A"})[1]["Leader"] == "none"


def test_group_describe_keeps_notes_and_offsets_and_masks_members():
    active = GROUPS.replace("-            -     -", "consumer-1-ab  /127.0.0.1  consumer-1")
    assert failover.group_describe(GROUPS)[0] == "Consumer group 'g' has no active members."
    row = failover.group_describe(active)[1]
    assert row["CURRENT-OFFSET"] == "201" and row["LAG"] == "0"
    assert (row["CONSUMER-ID"], row["HOST"], row["CLIENT-ID"]) == ("<member>",) * 3


def test_differing_fields_tells_an_isr_order_from_another_isr():
    kafka = failover.topic_describe(TOPICS, {3: "A", 1: "B", 2: "C"})
    reordered = [dict(kafka[0]), {**kafka[1], "Isr": "A,C"}]
    del reordered[0]["TopicId"]
    assert failover.differing_fields(kafka, reordered) == {"TopicId", "Isr order"}
    assert failover.differing_fields(kafka, [kafka[0], {**kafka[1], "Isr": "A"}]) == {"Isr"}
    assert failover.differing_fields(kafka, kafka[:1]) == {"lines"}
    assert failover.differing_fields(["a note"], ["another note"]) == {"lines"}


def test_a_tool_output_is_explained_only_when_every_differing_column_is(monkeypatch):
    # reasons of the kind the page lists (these two differences are fixed: examples only)
    monkeypatch.setitem(fidelity.KNOWN_FAILOVER, ("kafka-topics --describe", "Isr order"), "another order")
    monkeypatch.setitem(fidelity.KNOWN_FAILOVER, ("partition leader_epoch", "reassignment"), "another epoch")
    kafka = failover.topic_describe(TOPICS, {3: "A", 1: "B", 2: "C"})
    order = {"step": "leader kill", "what": "kafka-topics --describe", "kafka": kafka,
             "ours": [kafka[0], {**kafka[1], "Isr": "A,C"}]}
    leader = {**order, "ours": [kafka[0], {**kafka[1], "Isr": "A,C", "Leader": "B"}]}
    assert fidelity.explain_failover(order) and fidelity.explain_failover(leader) is None
    epoch = {"step": "reassignment", "what": "partition leader_epoch", "kafka": "+5", "ours": "+4"}
    same = {"step": "leader kill", "what": "partition leader", "kafka": "B", "ours": "B"}
    assert fidelity.unexplained_failover([order, leader, epoch, same]) == [leader]
    page = fidelity.render([], "3.9.2", [], [order, leader, epoch, same])
    assert "1 of 4 rows are the same" in page and page.count("**unexplained**") == 1
    assert "| leader kill | partition leader | `\"B\"` | `\"B\"` |  |" in page
