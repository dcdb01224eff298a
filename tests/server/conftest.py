"""One ``hudisql serve`` for the server tests, shared by every module of this package
(starting it and building its table is the slow part): a small hudi table, two users, a
TLS certificate, on the suite's SparkSession."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PASSWORD = "s3cret-pw"


@dataclass
class Served:
    """The running server and what clients need to reach it."""

    server: object
    port: int
    cert: Path
    users: Path
    hudi: object

    def dsn(self, user: str = "alice", **extra: str) -> str:
        """A libpq connection string for ``user``."""
        parts = {"host": "127.0.0.1", "port": str(self.port), "dbname": "hudisql",
                 "user": user, "password": PASSWORD, "sslmode": "disable", **extra}
        return " ".join(f"{k}={v}" for k, v in parts.items())


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate and key for 127.0.0.1, made with ``cryptography``."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "server.crt", directory / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture(scope="package")
def served(spark, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:  # type: ignore[no-untyped-def]
    """A server with users ``alice`` (readwrite) and ``reader`` (readonly), TLS offered, a
    1 MiB message limit, over a catalog of its own holding ``trips`` (4 rows)."""
    import hudisql
    from hudisql.server import PgServer, ServerConfig
    from hudisql.server.auth import READONLY, add_user

    root = tmp_path_factory.mktemp("serve")
    catalog = f"sqlite:///{root}/catalog.db"
    hudi = hudisql.connect(spark, warehouse=str(root / "warehouse"),
                           catalog=catalog)
    hudi.sql("CREATE TABLE trips (ts BIGINT, uuid STRING, fare DOUBLE, city STRING) USING hudi "
             "TBLPROPERTIES (primaryKey = 'uuid', preCombineField = 'ts')")
    hudi.sql("INSERT INTO trips VALUES (1, 'a', 19.1, 'sf'), (2, 'b', 27.7, 'la'), "
             "(3, 'c', 33.0, 'sf'), (4, 'd', 5.5, 'ny')")
    users = root / "users"
    add_user(users, "alice", PASSWORD)
    add_user(users, "reader", PASSWORD, READONLY)
    cert, key = self_signed(root)
    config = ServerConfig(port=0, catalog=catalog, users_file=str(users), tls_cert=str(cert),
                          tls_key=str(key), max_message_bytes=1 << 20)
    with PgServer(config, hudi=hudi) as server:
        yield Served(server, server.port, cert, users, hudi)
    hudi.close()
