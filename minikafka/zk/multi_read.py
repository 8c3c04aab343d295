"""ZooKeeper's multiRead (opcode 22, ZooKeeper 3.6 and later) as a kazoo request record:
many getData reads in one request, answered in one response, each read with its own
outcome (data and stat, or its error).  kazoo sends single reads only; a controller that
reads every partition's state of a large cluster pays one request, one answer and one
crossing from kazoo's thread to the event loop per znode, which inside a busy broker
costs far more than the read itself.  The layout is ZooKeeper's MultiOperationRecord and
MultiResponse: a MultiHeader (type, done, err) before each op and each result, and a
closing header with done set.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any

from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import GetData, MultiHeader, int_struct, multiheader_struct, read_buffer, stat_struct
from kazoo.protocol.states import ZnodeStat

ERROR_TYPE = -1  # a result's MultiHeader type when that read failed (ZooKeeper's OpCode.error)


class MultiRead(namedtuple("MultiRead", "paths")):
    """getData of every path (already chrooted), in one request."""

    type = 22

    def serialize(self) -> bytearray:
        out = bytearray()
        for path in self.paths:
            out.extend(MultiHeader(GetData.type, False, -1).serialize() + GetData(path, None).serialize())
        return out + multiheader_struct.pack(-1, True, -1)

    @classmethod
    def deserialize(cls, buf: bytes, offset: int) -> list[Any]:
        """One entry per path: ``(data, ZnodeStat)``, or kazoo's exception for that read."""
        results: list[Any] = []
        header, offset = MultiHeader.deserialize(buf, offset)
        while not header.done:
            if header.type == GetData.type:
                data, offset = read_buffer(buf, offset)
                stat = ZnodeStat._make(stat_struct.unpack_from(buf, offset))
                offset += stat_struct.size
                results.append((data, stat))
            elif header.type == ERROR_TYPE:
                err = int_struct.unpack_from(buf, offset)[0]
                offset += int_struct.size
                results.append(EXCEPTIONS[err]())
            else:
                raise ValueError(f"multiRead result of type {header.type}: only getData results are expected")
            header, offset = MultiHeader.deserialize(buf, offset)
        return results
