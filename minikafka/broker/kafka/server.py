"""The Kafka listener's TCP side: accept connections, read frames, answer in order.

Each connection is served by one task owned by :class:`KafkaServer`.  Requests on a
connection are handled one at a time and answered in the order they arrived, as a
Kafka broker does (it mutes a connection while one of its requests is in flight), so
a client may pipeline.  A frame larger than ``socket.request.max.bytes``, a frame
that does not decode, or an API or version this broker does not serve closes the
connection (an ApiVersions request of an unknown version is answered instead, with
UNSUPPORTED_VERSION and the supported ranges); the broker itself never stops.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ...protocol.kafka import frames
from ...protocol.kafka.apis import API_VERSIONS
from ...protocol.kafka.wire import MalformedFrame
from .handlers import Connection, KafkaHandlers

if TYPE_CHECKING:
    from ..server import Broker

log = logging.getLogger(__name__)


class KafkaServer:
    """The Kafka listener(s) of one broker and their connection tasks."""

    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self.handlers = KafkaHandlers(broker)
        self._servers: list[asyncio.AbstractServer] = []
        self._connections: set[asyncio.Task] = set()
        self.max_frame = broker.config.get("socket.request.max.bytes")

    def endpoints(self) -> list[tuple[str, int]]:
        """``(host, port)`` of every Kafka socket this broker should listen on."""
        cfg = self.broker.config
        out = []
        if cfg.kafka_listen_port is not None:
            out.append((cfg.kafka_listen_host or cfg.listen_host, cfg.kafka_listen_port))
        if cfg.kafka_external_listen_port is not None:
            out.append((cfg.kafka_external_listen_host or cfg.kafka_listen_host or cfg.listen_host,
                        cfg.kafka_external_listen_port))
        return out

    async def start(self) -> None:
        for host, port in self.endpoints():
            server = await asyncio.start_server(self._accept, host, port, reuse_address=True)
            self._servers.append(server)

    async def stop(self) -> None:
        """Stop accepting, then end every open connection."""
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        sockname = writer.get_extra_info("sockname")
        peer = writer.get_extra_info("peername")
        local_port = sockname[1] if isinstance(sockname, (tuple, list)) and len(sockname) >= 2 else -1
        conn = Connection(external=self.broker.listeners.is_kafka_external_port(local_port),
                          peer=f"{peer[0]}:{peer[1]}" if isinstance(peer, (tuple, list)) else str(peer))
        try:
            await self._serve(reader, writer, conn)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("Kafka connection from %s failed", conn.peer)
        finally:
            self._connections.discard(task)
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, asyncio.CancelledError):
                pass
            except Exception:  # noqa: BLE001 - closing a broken socket must not raise
                pass

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Connection) -> None:
        metrics = self.broker.metrics
        while True:
            size = int.from_bytes(await reader.readexactly(4), "big", signed=True)
            if size < 8 or size > self.max_frame:
                log.warning("closing Kafka connection from %s: frame of %d bytes (must be 8..%d, "
                            "socket.request.max.bytes)", conn.peer, size, self.max_frame)
                metrics.count("kafka_frames_rejected")
                return
            payload = await reader.readexactly(size)
            try:
                header, api, body = frames.decode_request(payload)
            except frames.UnsupportedRequest as exc:
                if exc.header.api_key == API_VERSIONS.key:
                    writer.write(frames.api_versions_error(exc.header.correlation_id))
                    await writer.drain()
                    continue
                log.warning("closing Kafka connection from %s (client %r): %s", conn.peer, exc.header.client_id, exc)
                metrics.count("kafka_unsupported_requests")
                return
            except MalformedFrame as exc:
                log.warning("closing Kafka connection from %s: malformed request: %s", conn.peer, exc)
                metrics.count("kafka_frames_rejected")
                return
            conn.client_id = header.client_id
            response = await self.handlers.handle(api, header, body, conn)
            if conn.close_after:
                return
            if response is None:  # Produce with acks=0 gets no answer
                continue
            writer.write(frames.encode_response(api, header.api_version, header.correlation_id, response))
            await writer.drain()
