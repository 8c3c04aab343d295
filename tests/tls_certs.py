"""The tests' TLS certificates: the harness's own (minikafka.testing.tls)."""
from minikafka.testing.tls import Certs, make_certs

__all__ = ["Certs", "make_certs"]
