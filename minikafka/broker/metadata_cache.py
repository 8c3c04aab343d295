"""The broker's metadata cache: what UpdateMetadata said about the cluster, and a way
to wait until it says something (created topics led, deleted topics gone)."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Callable

from ..protocol.rpc.types import UpdateMetadataRequest, encode_PartitionState
from ..protocol.topic_ids import ZERO_TOPIC_ID


@dataclass
class MetadataCache:
    """Live brokers, the controller and every partition's leader/ISR as last sent by the controller."""

    controller_id: int = -1
    controller_epoch: int = -1
    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    partitions: dict[tuple[str, int], dict] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)  # topic -> its id (KIP-516)
    topics_by_id: dict[str, str] = field(default_factory=dict)  # the reverse
    # topic -> partition -> state: the same states by topic, so that a topic's partitions
    # are found without a walk of every partition (a Metadata answer asks per topic)
    by_topic: dict[str, dict[int, dict]] = field(default_factory=dict)
    version: int = 0
    _changed: asyncio.Event | None = field(default=None, repr=False)

    def update(self, msg: UpdateMetadataRequest) -> None:
        """Take an UpdateMetadata and wake whoever waits for the metadata to change."""
        self.controller_id = msg.controller_id
        self.controller_epoch = msg.controller_epoch
        self.brokers = {b.id: (b.host, b.port) for b in msg.live_brokers}
        for st in msg.partition_states:
            state = self.partitions[(st.topic, st.partition)] = encode_PartitionState(st)
            self.by_topic.setdefault(st.topic, {})[st.partition] = state
            if st.topic_id != ZERO_TOPIC_ID and self.topic_ids.get(st.topic) != st.topic_id:
                self.topics_by_id.pop(self.topic_ids.get(st.topic, ZERO_TOPIC_ID), None)
                self.topic_ids[st.topic] = st.topic_id
                self.topics_by_id[st.topic_id] = st.topic
        for topic in msg.deleted_topics:
            for p in self.by_topic.pop(topic, {}):
                self.partitions.pop((topic, p), None)
            self.topics_by_id.pop(self.topic_ids.pop(topic, ZERO_TOPIC_ID), None)
        self.version += 1
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def wait_until(self, ready: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``ready()`` holds after some UpdateMetadata, or the timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not ready():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            if self._changed is None:
                self._changed = asyncio.Event()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except asyncio.TimeoutError:
                return ready()
        return True

    def topic_id(self, topic: str) -> str:
        """The topic's id (KIP-516); the zero id for a topic not known here."""
        return self.topic_ids.get(topic, ZERO_TOPIC_ID)

    def topic_name(self, topic_id: str) -> str | None:
        """The topic that has ``topic_id`` now; None when no topic known here has it."""
        return self.topics_by_id.get(topic_id)

    def topics(self) -> list[str]:
        return sorted(self.by_topic)

    def partitions_of(self, topic: str) -> list[dict]:
        """The topic's partition states by partition number (empty: a topic not known here)."""
        return [st for _, st in sorted(self.by_topic.get(topic, {}).items())]
