"""Who sent a request and on which listener: what a handler may know of its transport."""
from __future__ import annotations

from dataclasses import dataclass

from ...auth.acls import ANONYMOUS

# The listeners a request can arrive on.
INTERNAL, EXTERNAL, KAFKA, KAFKA_EXTERNAL = "INTERNAL", "EXTERNAL", "KAFKA", "KAFKA_EXTERNAL"


@dataclass(slots=True)
class RequestContext:
    """The caller of one request.  ``listener`` decides which endpoints Metadata and
    FindCoordinator answer with (a client is sent to the listener it came in on)."""

    listener: str = INTERNAL
    principal: str = ANONYMOUS
    client_host: str = ""  # the client's address (a group member's client_host)
    client_id: str = ""

    @property
    def kafka(self) -> bool:
        """The request came on a Kafka binary-protocol listener."""
        return self.listener in (KAFKA, KAFKA_EXTERNAL)

    @property
    def external(self) -> bool:
        """The request came on an external listener (msgpack or Kafka)."""
        return self.listener in (EXTERNAL, KAFKA_EXTERNAL)
