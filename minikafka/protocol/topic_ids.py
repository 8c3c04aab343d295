"""Topic ids (KIP-516): Kafka's 16-byte ``Uuid`` and its text form.

A topic gets a random id when it is created; the id lives in ``/brokers/topics/T``
(``"topic_id"``), in each partition folder's ``partition.metadata`` file, in the
controller's LeaderAndIsr and UpdateMetadata requests, and in the answers of Metadata
v10+, CreateTopics v7+, Fetch v13+ (which names topics by id) and DeleteTopics v6+.
A topic deleted and created again under the same name gets another id, so a client or
a broker holding the old one notices (UNKNOWN_TOPIC_ID, INCONSISTENT_TOPIC_ID).

The text form is Kafka's ``Uuid.toString()``: the 16 bytes in base64url without
padding, 22 characters.  Pure: the randomness comes from the caller
(:func:`new_topic_id` takes a source of 128-bit integers).
"""
from __future__ import annotations

import base64
import binascii
import uuid
from typing import Callable

ZERO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID: "no id" on the wire
ONE_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid.ONE_UUID, Kafka's METADATA_TOPIC_ID (the KRaft log)
RESERVED_TOPIC_IDS = frozenset({ZERO_TOPIC_ID, ONE_TOPIC_ID})


def encode_topic_id(raw: bytes) -> str:
    """The text form of 16 id bytes (base64url, no padding)."""
    if len(raw) != 16:
        raise ValueError(f"a topic id is 16 bytes, not {len(raw)}")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode_topic_id(text: str) -> bytes:
    """The 16 bytes of a topic id's text form; ValueError for anything else."""
    if not isinstance(text, str) or len(text) != 22:
        raise ValueError(f"a topic id is 22 base64url characters, not {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError):
        raise ValueError(f"{text!r} is not base64url") from None
    if encode_topic_id(raw) != text:  # characters outside the alphabet, or stray low bits
        raise ValueError(f"{text!r} is not the text form of a topic id")
    return raw


def is_topic_id(text: object) -> bool:
    """True when ``text`` is the text form of some id (the zero id included)."""
    try:
        decode_topic_id(text)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


def to_uuid(text: str) -> uuid.UUID:
    """A topic id as the wire codec's ``uuid.UUID`` (ValueError for a malformed one)."""
    return uuid.UUID(bytes=decode_topic_id(text))


def from_uuid(value: uuid.UUID | None) -> str:
    """A ``uuid`` field read from the wire as a topic id's text form (None: the zero id)."""
    return ZERO_TOPIC_ID if value is None else encode_topic_id(value.bytes)


def usable_topic_id(text: str) -> bool:
    """An id a topic may get: not reserved (zero, one) and, as Kafka's ``Uuid.randomUuid``
    insists, not starting with ``-`` (it would read as an option on a command line)."""
    return text not in RESERVED_TOPIC_IDS and not text.startswith("-")


def new_topic_id(draw: Callable[[], int]) -> str:
    """A fresh random topic id, as Kafka's ``Uuid.randomUuid``: a version-4 UUID from the
    128 random bits ``draw()`` returns, drawn again while it is reserved or starts with
    ``-``."""
    while True:
        text = encode_topic_id(uuid.UUID(int=draw() & ((1 << 128) - 1), version=4).bytes)
        if usable_topic_id(text):
            return text
