"""kazoo's "ZooKeeper cannot answer now" errors: a retriable condition, not a bug."""
from __future__ import annotations

from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, OperationTimeoutError, SessionExpiredError

ZK_UNREACHABLE = (ConnectionLoss, SessionExpiredError, ConnectionClosedError, OperationTimeoutError)
