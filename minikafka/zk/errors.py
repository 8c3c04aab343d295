"""The ZooKeeper adapter's own errors: what a caller of :class:`~minikafka.zk.session.ZkSession`
(or of the simulation's session, which has its face) may catch.

The adapter turns the ZooKeeper client library's exceptions into these, so nothing above
``minikafka/zk/`` knows the library.  Two kinds:

* :class:`ZooKeeperUnavailableError`: ZooKeeper cannot answer now (the connection was
  lost, the session expired or was closed, or no answer came within the session's request
  timeout).  It is retriable, and indefinite: a write may still be carried out.  The
  request layer answers it with Kafka's REQUEST_TIMED_OUT on both client listeners
  (:func:`minikafka.broker.connection_policy.request_failure`).
* the outcome of one operation, which callers handle as part of their logic:
  :class:`NoNodeError`, :class:`NodeExistsError`, :class:`BadVersionError`,
  :class:`NotEmptyError`, and :class:`RolledBackError` in a multi-op's result list for an
  op not applied because another op of the same transaction failed.

Any other refusal by ZooKeeper (no permission, bad arguments) is a plain
:class:`ZooKeeperError` naming ZooKeeper's reason.
"""
from __future__ import annotations


class ZooKeeperError(Exception):
    """Base of every error of the ZooKeeper adapter."""


class ZooKeeperUnavailableError(ZooKeeperError):
    """ZooKeeper cannot answer now: retriable; a write may still be carried out later."""


class ZooKeeperUnsupportedError(ZooKeeperError):
    """The server does not know the request (an older ZooKeeper)."""


class NoNodeError(ZooKeeperError):
    """The znode does not exist."""


class NodeExistsError(ZooKeeperError):
    """The znode exists already."""


class BadVersionError(ZooKeeperError):
    """The znode's version is not the one the operation expected (a conditional write lost a race)."""


class NotEmptyError(ZooKeeperError):
    """The znode has children, so it cannot be deleted."""


class RolledBackError(ZooKeeperError):
    """In a multi-op's results: this op was not applied because another op failed."""
