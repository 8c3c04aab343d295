"""The request layer's typed messages: generated from the msgpack API declarations, current,
and faithful (a validated map survives decode and encode unchanged)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import minikafka
from minikafka import errors
from minikafka.protocol.rpc import gen_types, types
from minikafka.protocol.rpc.messages import APIS, PARTITION_ERROR, TOP_LEVEL
from minikafka.protocol.rpc.schema import Struct

GENERATED = Path(minikafka.__file__).resolve().parent / "protocol" / "rpc" / "types.py"


def test_the_generated_module_is_current():
    assert GENERATED.read_text(encoding="utf-8") == gen_types.render(), \
        "run: python -m minikafka.protocol.rpc.gen_types > minikafka/protocol/rpc/types.py"


def _structs(s: Struct, seen: dict) -> None:
    seen[s.name] = s
    for f in s.fields:
        t = f.type
        while isinstance(t, (list, dict)):
            t = t[0] if isinstance(t, list) else next(iter(t.values()))
        if isinstance(t, Struct):
            _structs(t, seen)


ALL: dict[str, Struct] = {}
for _api in APIS.values():
    _structs(_api.request, ALL)
    _structs(_api.response, ALL)


@pytest.mark.parametrize("name", sorted(ALL))
def test_each_struct_is_a_dataclass_with_its_fields(name):
    cls = getattr(types, name)
    wire = [f.name for f in ALL[name].fields]
    errors_fields = {f.name for f in TOP_LEVEL} | {f.name for f in PARTITION_ERROR}
    expected = [n for n in wire if n not in errors_fields]
    if any(n in errors_fields for n in wire):
        expected.append("error")
    assert [f.name for f in dataclasses.fields(cls)] == expected


def test_every_api_has_a_decoder_and_an_encoder():
    assert set(types.DECODE_REQUEST) == set(APIS) == set(types.ENCODE_RESPONSE)


def test_a_validated_request_survives_decode_and_encode():
    body = {"acks": -1, "partitions": [{"topic": "t", "partition": 2, "records": b"x"}]}
    msg = APIS["produce"].request.validate(body)
    req = types.DECODE_REQUEST["produce"](msg)
    assert req.acks == -1 and req.timeout_ms == 30000
    assert req.partitions[0].topic == "t" and req.partitions[0].records == b"x"
    assert types.encode_ProduceRequest(req) == msg


def test_nested_nullable_and_map_fields_round_trip():
    body = {"controller_id": 1, "controller_epoch": 3, "partition_states": [], "deleted_topics": ["gone"],
            "live_brokers": [{"id": 1, "host": "h", "port": 1, "kafka": {"host": "k", "port": 2}}]}
    msg = APIS["update_metadata"].request.validate(body)
    req = types.decode_UpdateMetadataRequest(msg)
    assert req.live_brokers[0].kafka == types.Endpoint(host="k", port=2) and req.live_brokers[0].external is None
    assert types.encode_UpdateMetadataRequest(req) == msg


def test_errors_are_one_field_in_the_types_and_three_on_the_wire():
    entry = types.ProducePartitionResponse(topic="t", partition=0, base_offset=-1, log_append_time=-1,
                                           log_start_offset=-1, error=errors.NotLeaderOrFollowerError("moved"))
    wire = types.encode_ProducePartitionResponse(entry)
    assert (wire["error_code"], wire["error"], wire["message"]) == (6, "NOT_LEADER_OR_FOLLOWER", "moved")
    back = types.decode_ProducePartitionResponse(wire)
    assert isinstance(back.error, errors.NotLeaderOrFollowerError) and back.error.message == "moved"
    ok = types.encode_ProducePartitionResponse(dataclasses.replace(entry, error=None))
    assert (ok["error_code"], ok["error"], ok["message"]) == (0, "NONE", "")
    assert types.decode_ProducePartitionResponse(ok).error is None


def test_a_typed_call_sends_the_wire_map_and_decodes_the_answer_into_the_response_type():
    import asyncio

    from minikafka import errors
    from minikafka.protocol.rpc import types as t
    from minikafka.rpc import request

    sent = []

    async def call(host, port, api, body, timeout_s):
        sent.append((host, port, api, body, timeout_s))
        return {"session_id": 0, "error_code": 0, "error": "NONE", "message": "", "partitions": [
            {"topic": "t", "partition": 0, "high_watermark": 5, "log_start_offset": 0, "log_end_offset": 5,
             "leader_epoch": 2, "last_stable_offset": 5, "aborted_transactions": None, "records": b"",
             "error_code": 1, "error": "OFFSET_OUT_OF_RANGE", "message": "at 9"}]}

    req = t.FetchRequest(max_wait_ms=0, partitions=[t.FetchPartition(topic="t", partition=0, fetch_offset=9)])
    answer = asyncio.run(request(call, "h", 1, req, 2.5))
    ((host, port, api, body, timeout_s),) = sent
    assert (host, port, api, timeout_s) == ("h", 1, "fetch", 2.5) and t.FetchRequest.API == "fetch"
    assert body == t.encode_FetchRequest(req) and body["partitions"][0]["fetch_offset"] == 9
    assert isinstance(answer, t.FetchResponse)
    (p,) = answer.partitions
    assert (p.high_watermark, p.leader_epoch) == (5, 2)
    assert isinstance(p.error, errors.OffsetOutOfRangeError) and p.error.message == "at 9"
    # every API's request names it and has both sides' tables
    for api, decode in t.DECODE_REQUEST.items():
        assert t.ENCODE_REQUEST[api] and t.DECODE_RESPONSE[api]
