"""Credentials for a loopback Flower federation, made locally (no CA service, no internet).

A SuperLink with TLS needs a CA certificate, a server certificate the CA signed (valid for the
address the SuperNodes dial: 127.0.0.1 and localhost) and its private key. SuperNode
authentication needs one elliptic-curve key pair per SuperNode: the SuperLink admits a node
only if its public key was registered (``flwr supernode register``) and the node proves it holds
the private key. Flower reads the node keys in OpenSSH format and accepts NIST curves; P-384 as
Flower's own example.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALID_DAYS = 30
"""Certificates of a recipe run are throw-away: a month is plenty."""


@dataclass(frozen=True)
class NodeKeys:
    private: Path
    """OpenSSH private key (``flower-supernode --auth-supernode-private-key``)."""
    public: Path
    """OpenSSH public key (``flwr supernode register``)."""


@dataclass(frozen=True)
class Credentials:
    ca_cert: Path
    server_cert: Path
    server_key: Path
    nodes: list[NodeKeys]


def make_credentials(folder: str | Path, silos: int) -> Credentials:
    """Write a CA, a server certificate for 127.0.0.1/localhost and ``silos`` node key pairs
    into ``folder`` (private keys readable by the owner only)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP384R1())
    ca_name = _name("playerfl loopback CA")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA384())
    )
    server_key = ec.generate_private_key(ec.SECP384R1())
    sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    server_cert = (
        _builder(_name("localhost"), ca_name, server_key.public_key(), now)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA384())
    )
    out = Credentials(
        ca_cert=folder / "ca.crt",
        server_cert=folder / "server.pem",
        server_key=folder / "server.key",
        nodes=[
            NodeKeys(folder / f"supernode_{k}", folder / f"supernode_{k}.pub") for k in range(silos)
        ],
    )
    pem = serialization.Encoding.PEM
    out.ca_cert.write_bytes(ca_cert.public_bytes(pem))
    out.server_cert.write_bytes(server_cert.public_bytes(pem))
    _write_private(
        out.server_key,
        server_key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )
    for keys in out.nodes:
        write_node_keys(keys)
    return out


def write_node_keys(keys: NodeKeys) -> None:
    """A fresh P-384 key pair in OpenSSH format."""
    key = ec.generate_private_key(ec.SECP384R1())
    _write_private(
        keys.private,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        ),
    )
    keys.public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(subject, issuer, public_key, now) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=VALID_DAYS))
    )


def _write_private(path: Path, data: bytes) -> None:
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_bytes(data)
