"""Request and response framing of Kafka's protocol (no I/O).

On the wire every message is ``int32 size`` + payload.  A request payload starts
with the request header (api_key, api_version, correlation_id, client_id; plus
tagged fields in flexible versions, header v2); a response payload starts with the
correlation id (plus tagged fields for flexible versions, header v1; ApiVersions
responses always use header v0 so that a client can read them before it knows
what the broker supports).
"""
from __future__ import annotations

from dataclasses import dataclass

from .apis import API_VERSIONS, APIS, KafkaApi
from .wire import Reader, Writer

UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
#: the fewest bytes a request payload has: api_key, api_version and correlation_id
SMALLEST_REQUEST = 8


@dataclass(frozen=True)
class RequestHeader:
    """The header of one request."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


class UnsupportedRequest(Exception):
    """An API key this broker does not serve, or a version outside the served range.

    The connection answers what it can (ApiVersions gets its v0 error answer) and
    otherwise closes, as a Kafka broker does."""

    def __init__(self, header: RequestHeader, message: str) -> None:
        super().__init__(message)
        self.header = header


def peek_header(payload: bytes | memoryview) -> tuple[int, int, int]:
    """``(api_key, api_version, correlation_id)``: the part of the header that every version shares."""
    r = Reader(payload)
    return r.int16(), r.int16(), r.int32()


def decode_request(payload: bytes | bytearray | memoryview) -> tuple[RequestHeader, KafkaApi, dict]:
    """Parse one request payload (the bytes after the size prefix).

    Raises :class:`UnsupportedRequest` for an unknown API or version and
    :class:`~.wire.MalformedFrame` when the bytes do not follow the schema."""
    r = Reader(payload)
    api_key, api_version, correlation_id = r.int16(), r.int16(), r.int32()
    client_id = r.string(nullable=True)
    header = RequestHeader(api_key, api_version, correlation_id, client_id)
    api = APIS.get(api_key)
    if api is None:
        raise UnsupportedRequest(header, f"API key {api_key} is not supported by this broker")
    if not api.supports(api_version):
        raise UnsupportedRequest(header, f"{api.name} v{api_version} is not supported "
                                         f"(supported: v{api.min_version}-v{api.max_version})")
    flexible = api.flexible(api_version)
    if flexible:
        r.skip_tagged_fields()
    body = api.request.decode(r, api_version, flexible)
    # Bytes after the last field are ignored, as Kafka's own request parser does (some
    # clients pad flexible requests).
    return header, api, body


def encode_response(api: KafkaApi, version: int, correlation_id: int, body: dict) -> bytes:
    """A size-prefixed response frame."""
    w = Writer()
    w.int32(0)  # size, patched below
    w.int32(correlation_id)
    flexible = api.flexible(version)
    if flexible and api.key != API_VERSIONS.key:
        w.empty_tagged_fields()
    api.response.encode(w, body, version, flexible)
    frame = w.getvalue()
    return (len(frame) - 4).to_bytes(4, "big", signed=True) + frame[4:]


def supported_versions() -> list[dict]:
    """ApiVersions' ``api_keys``: every served API with its version range."""
    return [{"api_key": a.key, "min_version": a.min_version, "max_version": a.max_version}
            for a in sorted(APIS.values(), key=lambda a: a.key)]


def api_versions_error(correlation_id: int) -> bytes:
    """The answer to an ApiVersions request of an unsupported version: v0, UNSUPPORTED_VERSION, the ranges."""
    return encode_response(API_VERSIONS, 0, correlation_id,
                           {"error_code": UNSUPPORTED_VERSION, "api_keys": supported_versions()})


def encode_request(api: KafkaApi, version: int, correlation_id: int, client_id: str | None, body: dict) -> bytes:
    """A size-prefixed request frame (used by tests and tools that speak Kafka's protocol)."""
    w = Writer()
    w.int16(api.key)
    w.int16(version)
    w.int32(correlation_id)
    w.string(client_id)
    flexible = api.flexible(version)
    if flexible:
        w.empty_tagged_fields()
    api.request.encode(w, body, version, flexible)
    frame = w.getvalue()
    return len(frame).to_bytes(4, "big", signed=True) + frame


def decode_response(api: KafkaApi, version: int, payload: bytes | memoryview) -> tuple[int, dict]:
    """``(correlation_id, body)`` of a response payload (the bytes after the size prefix)."""
    r = Reader(payload)
    correlation_id = r.int32()
    flexible = api.flexible(version)
    if flexible and api.key != API_VERSIONS.key:
        r.skip_tagged_fields()
    return correlation_id, api.response.decode(r, version, flexible)
