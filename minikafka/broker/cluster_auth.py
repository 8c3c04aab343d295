"""Who may call the controller and replica APIs (Kafka's ClusterAction permission).

Brokers share one cluster credential (``--cluster-secret-file``, made by ``cluster up``;
docs/security.md).  Every request a broker sends to another carries it in the
``X-Minikafka-Cluster-Credential`` header.  The APIs below change replicas or reveal
what only replicas may see; without the credential they are answered
CLUSTER_AUTHORIZATION_FAILED and change nothing.  A broker started without a
credential checks nothing (and says so in its log at start).
"""
from __future__ import annotations

import hmac

from ..protocol.rpc.http import CLUSTER_CREDENTIAL_HEADER

# controller-to-broker and broker-to-controller requests
CLUSTER_ACTION_APIS = frozenset({"leader_and_isr", "update_metadata", "stop_replica", "controlled_shutdown",
                                 "write_txn_markers"})
# requests that are replica requests when they carry a replica id (>= 0)
REPLICA_APIS = frozenset({"fetch", "offsets_for_leader_epoch", "list_offsets"})

__all__ = ["CLUSTER_ACTION_APIS", "CLUSTER_CREDENTIAL_HEADER", "REPLICA_APIS", "allowed", "needs_cluster_action"]


def needs_cluster_action(api: str, request: dict) -> bool:
    """True for a request only holders of the cluster credential may make."""
    if api in CLUSTER_ACTION_APIS:
        return True
    return api in REPLICA_APIS and int(request.get("replica_id", -1)) >= 0


def allowed(secret: str | None, presented: str | None) -> bool:
    """Whether a request presenting ``presented`` passes (always, when no secret is set)."""
    if secret is None:
        return True
    return presented is not None and hmac.compare_digest(secret.encode(), presented.encode())
