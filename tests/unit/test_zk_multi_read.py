"""The multiRead record (minikafka/zk/multi_read.py) and ZkSession.get_many's fallback to
single reads when the server does not know multiRead (ZooKeeper before 3.6)."""
from __future__ import annotations

import asyncio
import struct

from kazoo.exceptions import NoNodeError, UnimplementedError

from minikafka.zk.multi_read import MultiRead
from minikafka.zk.session import ZkSession

STAT = struct.pack("!qqqqiiiqiiq", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)


def _header(kind: int, done: bool, err: int) -> bytes:
    return struct.pack("!iBi", kind, 1 if done else 0, err)


def test_the_request_is_zookeepers_multi_operation_record():
    body = bytes(MultiRead(["/a", "/bc"]).serialize())
    getdata = lambda path: struct.pack("!i", len(path)) + path.encode() + b"\x00"  # noqa: E731 (path, no watch)
    assert body == _header(4, False, -1) + getdata("/a") + _header(4, False, -1) + getdata("/bc") + _header(-1, True, -1)
    assert MultiRead.type == 22


def test_the_response_gives_each_read_its_data_and_stat_or_its_error():
    answer = (_header(4, False, 0) + struct.pack("!i", 3) + b"abc" + STAT
              + _header(-1, False, NoNodeError.code) + struct.pack("!i", NoNodeError.code)
              + _header(4, False, 0) + struct.pack("!i", -1) + STAT
              + _header(-1, True, -1))
    first, missing, empty = MultiRead.deserialize(answer, 0)
    assert first[0] == b"abc" and first[1].version == 5 and first[1].mzxid == 2
    assert isinstance(missing, NoNodeError) and empty[0] is None


def test_a_server_without_multi_read_gets_single_reads_from_then_on():
    async def main() -> None:
        zk = ZkSession("127.0.0.1:1")
        zk.client.handler.start()
        zk.loop = asyncio.get_running_loop()
        calls = []

        def refuse(request, async_result):  # ZooKeeper 3.5 answers an unknown opcode so
            calls.append(request.type)
            async_result.set_exception(UnimplementedError())

        async def get(path):
            calls.append(path)
            return None if path == "/gone" else (path.encode(), None)

        zk.client._call = refuse
        zk.get = get
        try:
            assert await zk.get_many(["/x", "/gone"]) == [(b"/x", None), None]
            assert await zk.get_many(["/y"]) == [(b"/y", None)]
            assert calls == [22, "/x", "/gone", "/y"]  # one multiRead refused, then single reads only
        finally:
            zk.client.handler.stop()
    asyncio.run(main())
