"""Requests that name topics by id (KIP-516) on the Kafka listener.

Fetch v13+ names every topic by its id, in the request (``topics``,
``forgotten_topics_data``) and in the answer (``responses``).  The request layer works
with names, so the listener translates through the broker's metadata cache: ids become
names on the way in, names become ids on the way out.  An id no topic has here (never
created, or the topic was deleted and perhaps created again under the same name with
another id) is answered UNKNOWN_TOPIC_ID for each partition the request named, as
Kafka's KafkaApis does; the rest of the request is served as usual.
"""
from __future__ import annotations

import uuid
from typing import Protocol

from ...errors import UnknownTopicIdError
from ...protocol.topic_ids import ZERO_TOPIC_ID, from_uuid, to_uuid


class TopicNames(Protocol):
    """The metadata cache's two lookups."""

    def topic_id(self, topic: str) -> str: ...

    def topic_name(self, topic_id: str) -> str | None: ...


def fetch_request_by_name(req: dict, names: TopicNames) -> tuple[dict, list[dict]]:
    """A Fetch v13+ request with each topic named by name, for the request layer, and the
    request's topics whose id no topic has (``{"topic_id", "partitions"}``).  Forgotten
    partitions of an unknown id are dropped (nothing to forget)."""
    topics, unknown = [], []
    for t in req["topics"]:
        name = names.topic_name(from_uuid(t.get("topic_id")))
        if name is None:
            unknown.append(t)
        else:
            topics.append({**t, "topic": name})
    forgotten = []
    for t in req.get("forgotten_topics_data") or ():
        name = names.topic_name(from_uuid(t.get("topic_id")))
        if name is not None:
            forgotten.append({**t, "topic": name})
    return {**req, "topics": topics, "forgotten_topics_data": forgotten}, unknown


def fetch_response_by_id(answer: dict, unknown: list[dict], names: TopicNames) -> dict:
    """The layer's Fetch answer with each topic named by its id, and UNKNOWN_TOPIC_ID for
    every partition of an unknown id (only when the whole request was served: a
    top-level error answers no topic)."""
    responses = [{**t, "topic_id": _uuid(names.topic_id(t["topic"]))} for t in answer.get("responses", ())]
    if answer.get("error_code", 0) == 0:
        code = UnknownTopicIdError.code.code
        for t in unknown:
            responses.append({"topic_id": t.get("topic_id"), "partitions": [
                {"partition_index": p["partition"], "error_code": code, "high_watermark": -1,
                 "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                 "preferred_read_replica": -1, "records": b""} for p in t["partitions"]]})
    return {**answer, "responses": responses}


def _uuid(topic_id: str) -> uuid.UUID:
    return to_uuid(topic_id or ZERO_TOPIC_ID)
