"""Test certificates made with the ``openssl`` command: a CA, a broker certificate for
127.0.0.1 / localhost, and client certificates, all PEM (valid two days).  The harness's
TLS settings (:mod:`minikafka.testing.security`) use them; so can a test that needs its
own (``make_certs(tmp_path)``)."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import ClientError


def _openssl(*args: str, cwd: Path) -> None:
    if shutil.which("openssl") is None:
        raise ClientError("TLS test certificates need the openssl command (Debian: apt-get install openssl)")
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@dataclass
class Certs:
    """The files :func:`make_certs` wrote in ``dir``."""
    dir: Path

    @property
    def ca(self) -> str:
        return str(self.dir / "ca.pem")

    @property
    def broker_keystore(self) -> str:
        """The broker's key and certificate in one PEM file (ssl.keystore.location)."""
        return str(self.dir / "broker-keystore.pem")

    def client(self, name: str) -> tuple[str, str]:
        """(certificate, key) of a client whose subject is CN=<name>,O=minikafka-tests."""
        return str(self.dir / f"{name}.pem"), str(self.dir / f"{name}.key")


def make_certs(dir: Path, clients: tuple[str, ...] = ("carol",)) -> Certs:
    """A CA, a broker key and certificate (for 127.0.0.1 and localhost) and a client
    certificate per name in ``clients``, written to ``dir``."""
    dir = Path(dir)
    dir.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/O=minikafka-tests/CN=test CA", cwd=dir)
    (dir / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")

    def signed(name: str, subject: str, ext: bool) -> None:
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", subject, cwd=dir)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.pem", "-days", "2", *(["-extfile", "san.ext"] if ext else []), cwd=dir)

    signed("broker", "/O=minikafka-tests/CN=localhost", True)
    (dir / "broker-keystore.pem").write_text((dir / "broker.key").read_text() + (dir / "broker.pem").read_text())
    for name in clients:
        signed(name, f"/O=minikafka-tests/CN={name}", False)
    return Certs(dir)
