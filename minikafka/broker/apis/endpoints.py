"""The live brokers' endpoints a request is answered with, for its listener."""
from __future__ import annotations

from ...errors import CoordinatorNotAvailableError
from ...protocol.rpc.types import Broker as BrokerEndpoint
from ...protocol.rpc.types import FindCoordinatorResponse
from ..listeners import Listeners
from ..metadata_cache import MetadataCache
from .context import RequestContext


class Endpoints:
    """Live brokers as Metadata and FindCoordinator name them: on a Kafka listener their
    Kafka endpoints (external ones on the external Kafka listener), else their msgpack
    endpoints for the listener the request came in on."""

    def __init__(self, broker_id: int, metadata: MetadataCache, listeners: Listeners) -> None:
        self.broker_id = broker_id
        self.metadata = metadata
        self.listeners = listeners

    def brokers(self, ctx: RequestContext) -> list[BrokerEndpoint]:
        if ctx.kafka:
            found = self.listeners.kafka_brokers(self.metadata.brokers, self.broker_id, ctx.external)
        else:
            found = self.listeners.brokers(self.metadata.brokers, self.broker_id)
        return [BrokerEndpoint(id=b["id"], host=b["host"], port=b["port"]) for b in found]

    def of(self, broker_id: int, ctx: RequestContext) -> BrokerEndpoint | None:
        """``broker_id``'s endpoint for this request, None when it is not alive (or has no
        listener of the request's protocol)."""
        return next((b for b in self.brokers(ctx) if b.id == broker_id), None)

    def coordinator(self, node: int, ctx: RequestContext, what: str) -> FindCoordinatorResponse:
        """FindCoordinator's answer naming broker ``node`` at the endpoint of the listener
        ``ctx`` came on; COORDINATOR_NOT_AVAILABLE when it is not alive (or has no such
        listener).  ``what`` names the coordinator in the message."""
        b = self.of(node, ctx)
        if b is None:
            raise CoordinatorNotAvailableError(f"{what} broker {node} is not alive"
                                               + (" or has no Kafka listener" if ctx.kafka else ""))
        return FindCoordinatorResponse(node_id=node, host=b.host, port=b.port)
