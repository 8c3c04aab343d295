"""One client connection on the Kafka listener: what its requests' handlers may know of it."""
from __future__ import annotations

from dataclasses import dataclass

from ..apis.context import KAFKA, KAFKA_EXTERNAL, RequestContext


@dataclass
class Connection:
    """What a handler may need to know about the connection a request came on."""

    external: bool
    peer: str
    client_id: str | None = None
    close_after: bool = False  # set by a handler to close the connection without answering
    listener: str = "KAFKA"
    sasl: bool = False  # a SASL_* listener: authenticate before anything else
    principal: str = "User:ANONYMOUS"
    mechanism: str | None = None  # chosen by SaslHandshake
    authenticated: bool = False
    raw_sasl_next: bool = False  # SaslHandshake v0: the next frame is the bare token
    close_after_answer: bool = False  # answer, then close (a failed SaslAuthenticate)

    def authenticate(self, principal: str) -> None:
        """The client proved who it is: its requests now run as ``principal``."""
        self.principal = principal
        self.authenticated = True

    def context(self) -> RequestContext:
        """What the request layer may know of this connection's current request."""
        host = self.peer.rsplit(":", 1)[0].strip("[]") if ":" in self.peer else self.peer
        return RequestContext(listener=KAFKA_EXTERNAL if self.external else KAFKA, principal=self.principal,
                              client_host=host, client_id=self.client_id or "")
