"""Our Kafka protocol declarations checked against an independent implementation.

kafka-python (a dev dependency) ships Kafka's own JSON message definitions and its
own encoder.  For every API and version we serve (where those definitions still
list the version), the non-tagged fields must match in order, name, type, presence
and nullability; and bytes encoded by kafka-python must decode with our schemas and
re-encode to the same bytes.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import kafka.protocol as kafka_protocol  # kafka-python, a dev dependency
import pytest

from minikafka.protocol.kafka import apis, frames
from minikafka.protocol.kafka.schema import Struct, Versions
from minikafka.protocol.kafka.wire import MalformedFrame, Reader, Writer

RESOURCES = Path(kafka_protocol.__file__).parent / "schemas" / "resources"


def load(name: str) -> dict:
    text = (RESOURCES / f"{name}.json").read_text()
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def expected_fields(fields: list[dict], version: int, common: dict[str, list[dict]]) -> list:
    out = []
    for f in fields:
        if "tag" in f or version not in Versions.parse(f.get("versions", "0+")):
            continue
        nullable = version in Versions.parse(f.get("nullableVersions", "none"))
        t = f["type"]
        array = t.startswith("[]")
        base = t[2:] if array else t
        if base[0].isupper():
            sub = f.get("fields") or common[base]
            typ = ("struct", tuple(expected_fields(sub, version, common)))
        else:
            typ = base
        out.append((snake(f["name"]), ("array", typ) if array else typ, nullable))
    return out


def our_fields(struct: Struct, version: int) -> list:
    out = []
    for f in struct.fields:
        if version not in f.versions:
            continue
        t = f.type
        array = isinstance(t, list)
        base = t[0] if array else t
        typ = ("struct", tuple(our_fields(base, version))) if isinstance(base, Struct) else base
        out.append((f.name, ("array", typ) if array else typ, version in f.nullable))
    return out


CASES = [(api, kind, v) for api in apis.APIS.values() for kind in ("Request", "Response")
         for v in range(api.min_version, api.max_version + 1)]


@pytest.mark.parametrize("api,kind,version", CASES, ids=[f"{a.name}{k}-v{v}" for a, k, v in CASES])
def test_declaration_matches_kafka_definition(api, kind, version):
    spec = load(f"{api.name}{kind}")
    assert spec["apiKey"] == api.key
    if version not in Versions.parse(spec["validVersions"]):
        # Kafka 4 dropped this old version from its definitions (e.g. Metadata v0-3); it
        # was checked against Kafka 3.x's definitions and is covered by the round trips below.
        return
    flexible = Versions.parse(spec["flexibleVersions"])
    if flexible.lo > flexible.hi:  # "none": no version is flexible
        assert api.flexible_from > api.max_version
    else:
        assert flexible.lo == api.flexible_from
    common = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}
    struct = api.request if kind == "Request" else api.response
    assert our_fields(struct, version) == expected_fields(spec["fields"], version, common)


def test_most_versions_are_checked_against_the_definitions():
    checked = [(a, k, v) for a, k, v in CASES if v in Versions.parse(load(f"{a.name}{k}")["validVersions"])]
    assert len(checked) >= 0.7 * len(CASES)


def test_request_frames_round_trip_every_version():
    sample = {
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"abc"}]}],
        "topics": [], "resources": [], "topic_names": ["a", "b"], "acks": -1, "timeout_ms": 1000,
    }
    for api in apis.APIS.values():
        for v in range(api.min_version, api.max_version + 1):
            frame = frames.encode_request(api, v, 42, "client-1", sample)
            header, got_api, body = frames.decode_request(frame[4:])
            assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (api.key, v, 42, "client-1")
            assert frames.encode_request(api, v, 42, "client-1", body) == frame


def test_flexible_encoding_is_compact():
    w = Writer()
    apis.METADATA.response.encode(w, {"brokers": [{"node_id": 1, "host": "h", "port": 9}], "topics": []}, 9, True)
    data = w.getvalue()
    # throttle int32, brokers compact array (2 = 1 element), node_id int32, host compact string "h" (2, 'h')
    assert data[:4] == b"\x00\x00\x00\x00" and data[4] == 2 and data[9:11] == b"\x02h"
    back = apis.METADATA.response.decode(Reader(data), 9, True)
    assert back["brokers"][0]["host"] == "h" and back["brokers"][0]["rack"] is None


def test_unsupported_api_versions_answer_is_v0_with_ranges():
    frame = frames.api_versions_error(7)
    corr, body = frames.decode_response(apis.API_VERSIONS, 0, frame[4:])
    assert corr == 7 and body["error_code"] == 35
    keys = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
    assert keys[0] == (3, 9) and keys[1] == (4, 13) and keys[3] == (0, 12) and keys[18] == (0, 3)


def test_unknown_api_and_version_are_refused():
    w = Writer()
    for key, version in ((999, 0), (apis.PRODUCE.key, 2), (apis.FETCH.key, 99)):
        w = Writer()
        w.int16(key), w.int16(version), w.int32(1), w.string("c")
        with pytest.raises(frames.UnsupportedRequest):
            frames.decode_request(w.getvalue())


@pytest.mark.parametrize("payload", [
    b"", b"\x00", b"\x00\x03\x00\x09\x00\x00\x00\x01",  # header cut short
    b"\x00\x03\x00\x01\x00\x00\x00\x01\xff\xfe",       # negative client id length
    b"\x00\x03\x00\x01\x00\x00\x00\x01\x00\x00\x7f\xff\xff\xff",  # array longer than the frame
    b"\x00\x03\x00\x09\x00\x00\x00\x01\x00\x00\x00\x05\x80\x80\x80",  # truncated varint (flexible)
])
def test_malformed_frames_raise_malformed(payload):
    with pytest.raises(MalformedFrame):
        frames.decode_request(payload)


def test_kafka_python_encoded_requests_decode_here():
    """Bytes that kafka-python's own encoder writes for real requests decode with our schemas."""
    from kafka.protocol.metadata import MetadataRequest
    from kafka.protocol.producer import ProduceRequest
    from kafka.protocol.consumer import FetchRequest
    checks = 0
    for v in range(max(apis.METADATA.min_version, MetadataRequest.min_version), apis.METADATA.max_version + 1):
        req = MetadataRequest[v](topics=[MetadataRequest[v].MetadataRequestTopic(name="orders")])
        checks += _same_after_decode(apis.METADATA, v, req, lambda b: [t["name"] for t in b["topics"]] == ["orders"])
    for v in range(apis.PRODUCE.min_version, apis.PRODUCE.max_version + 1):
        P = ProduceRequest[v]
        req = P(transactional_id=None, acks=-1, timeout_ms=1500, topic_data=[P.TopicProduceData(
            name="orders", partition_data=[P.TopicProduceData.PartitionProduceData(index=2, records=b"xyz")])])
        checks += _same_after_decode(apis.PRODUCE, v, req, lambda b: b["topic_data"][0]["partition_data"][0] == {"index": 2, "records": b"xyz"})
    for v in range(apis.FETCH.min_version, apis.FETCH.max_version + 1):
        Fr = FetchRequest[v]
        req = Fr(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
                 session_epoch=-1, topics=[Fr.FetchTopic(topic="orders", partitions=[Fr.FetchTopic.FetchPartition(
                     partition=1, current_leader_epoch=3, fetch_offset=77, last_fetched_epoch=-1, log_start_offset=-1,
                     partition_max_bytes=4096)])], forgotten_topics_data=[], rack_id="")
        checks += _same_after_decode(apis.FETCH, v, req, lambda b: b["topics"][0]["partitions"][0]["fetch_offset"] == 77)
    assert checks > 20


def _same_after_decode(api, version, kp_request, check) -> int:
    data = kp_request.encode(header=False) if _accepts_header_kw(kp_request) else kp_request.encode()
    body = api.request.decode(Reader(data), version, api.flexible(version))
    assert check(body), body
    w = Writer()
    api.request.encode(w, body, version, api.flexible(version))
    assert w.getvalue() == bytes(data), f"{api.name} v{version}"
    return 1


def _accepts_header_kw(obj) -> bool:
    import inspect
    try:
        return "header" in inspect.signature(obj.encode).parameters
    except (TypeError, ValueError):
        return False
