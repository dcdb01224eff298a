"""Who may connect: a users file of SCRAM-SHA-256 verifiers and roles, and the SCRAM exchange.

The users file holds one user a line, ``name role verifier``, where role is ``readwrite``
or ``readonly`` and verifier is PostgreSQL's own form
(``SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>``, as ``pg_authid`` keeps it),
so no password is stored; ``#`` starts a comment. ``hudisql serve --add-user NAME --users
FILE`` appends a line. The exchange follows RFC 5802/7677 without channel binding.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from hudisql.errors import HudiSqlError

MECHANISM = "SCRAM-SHA-256"
ITERATIONS = 4096
READWRITE = "readwrite"
READONLY = "readonly"


class AuthenticationError(HudiSqlError):
    """A login failed (unknown user, wrong password, malformed SCRAM message); SQLSTATE
    ``28P01``. The message never says which of user or password was wrong."""

    sqlstate = "28P01"


@dataclass(frozen=True)
class User:
    """One user of the users file: name, role and SCRAM verifier parts."""

    name: str
    role: str
    iterations: int
    salt: bytes
    stored_key: bytes
    server_key: bytes

    @property
    def read_only(self) -> bool:
        """True for the ``readonly`` role: statements that write are refused."""
        return self.role == READONLY


def _hmac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


def scram_verifier(password: str, salt: bytes | None = None,
                   iterations: int = ITERATIONS) -> str:
    """PostgreSQL's SCRAM-SHA-256 verifier of ``password`` (a random salt when None)."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, iterations)
    stored = hashlib.sha256(_hmac(salted, b"Client Key")).digest()
    server = _hmac(salted, b"Server Key")
    b64 = base64.b64encode
    return (f"{MECHANISM}${iterations}:{b64(salt).decode()}$"
            f"{b64(stored).decode()}:{b64(server).decode()}")


def parse_user(line: str, where: str) -> User:
    """One users-file line as a :class:`User`.

    Raises:
        AuthenticationError: the line is not ``name role verifier``.
    """
    parts = line.split()
    if len(parts) != 3 or parts[1] not in (READWRITE, READONLY):
        raise AuthenticationError(
            f"{where}: expected 'name readwrite|readonly SCRAM-SHA-256$...', got {line!r}")
    name, role, verifier = parts
    try:
        mechanism, rest = verifier.split("$", 1)
        head, keys = rest.split("$", 1)
        iterations, salt = head.split(":", 1)
        stored, server = keys.split(":", 1)
        if mechanism != MECHANISM:
            raise ValueError(mechanism)
        return User(name, role, int(iterations), base64.b64decode(salt),
                    base64.b64decode(stored), base64.b64decode(server))
    except ValueError as exc:
        raise AuthenticationError(
            f"{where}: user {name!r} has a malformed verifier ({exc}); make it with "
            "hudisql serve --add-user") from exc


def load_users(path: str | os.PathLike[str]) -> dict[str, User]:
    """The users of a users file, by name.

    Raises:
        AuthenticationError: a malformed line (naming the file and line).
        OSError: the file cannot be read.
    """
    users = {}
    for number, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line:
            user = parse_user(line, f"{path}, line {number}")
            users[user.name] = user
    return users


def add_user(path: str | os.PathLike[str], name: str, password: str,
             role: str = READWRITE) -> None:
    """Append (or replace) ``name``'s line in the users file, created with mode 0600."""
    if not name or any(c.isspace() for c in name):
        raise AuthenticationError(f"user name {name!r} must be non-empty, without spaces")
    if role not in (READWRITE, READONLY):
        raise AuthenticationError(f"role {role!r} must be {READWRITE} or {READONLY}")
    file = Path(path)
    lines = file.read_text(encoding="utf-8").splitlines() if file.exists() else []
    lines = [ln for ln in lines if ln.split()[:1] != [name]]
    lines.append(f"{name} {role} {scram_verifier(password)}")
    file.touch(mode=0o600, exist_ok=True)
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")


class ScramExchange:
    """The server's side of one SCRAM-SHA-256 login: two client messages in, two out.

    An unknown user goes through the same steps with a made-up verifier, so the client
    cannot tell an unknown user from a wrong password.
    """

    def __init__(self, user: User | None, name: str) -> None:
        self.user = user or User(name, READONLY, ITERATIONS, secrets.token_bytes(16),
                                 secrets.token_bytes(32), secrets.token_bytes(32))
        self.known = user is not None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._gs2 = ""

    def first(self, client_first: str) -> str:
        """The server-first-message answering ``client_first`` (``n,,n=...,r=...``).

        Raises:
            AuthenticationError: malformed, or asks for channel binding.
        """
        if client_first.startswith("p="):
            raise AuthenticationError("channel binding is not supported; use SCRAM-SHA-256")
        if not client_first.startswith(("n,", "y,")):
            raise AuthenticationError("malformed SCRAM client-first-message")
        parts = client_first.split(",", 2)
        if len(parts) < 3:
            raise AuthenticationError("malformed SCRAM client-first-message")
        self._gs2 = f"{parts[0]},{parts[1]},"
        self._client_first_bare = parts[2]
        attributes = dict(a.split("=", 1) for a in parts[2].split(",") if "=" in a)
        client_nonce = attributes.get("r")
        if not client_nonce:
            raise AuthenticationError("SCRAM client-first-message has no nonce")
        self._nonce = client_nonce + base64.b64encode(secrets.token_bytes(18)).decode()
        salt = base64.b64encode(self.user.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={self.user.iterations}"
        return self._server_first

    def final(self, client_final: str) -> str:
        """The server-final-message (``v=...``) once the client's proof checks out.

        Raises:
            AuthenticationError: a wrong password, an unknown user, or a malformed message.
        """
        attributes = dict(a.split("=", 1) for a in client_final.split(",") if "=" in a)
        without_proof = client_final.rsplit(",p=", 1)[0]
        if attributes.get("r") != self._nonce or "p" not in attributes:
            raise AuthenticationError("malformed SCRAM client-final-message (nonce or proof)")
        if base64.b64decode(attributes.get("c", "")) != self._gs2.encode():
            raise AuthenticationError("SCRAM channel-binding header mismatch")
        auth_message = ",".join(
            (self._client_first_bare, self._server_first, without_proof)).encode()
        proof = base64.b64decode(attributes["p"])
        signature = _hmac(self.user.stored_key, auth_message)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=False))
        if not (self.known and len(proof) == len(signature) and hmac.compare_digest(
                hashlib.sha256(client_key).digest(), self.user.stored_key)):
            raise AuthenticationError(
                f'password authentication failed for user "{self.user.name}"')
        server_signature = _hmac(self.user.server_key, auth_message)
        return "v=" + base64.b64encode(server_signature).decode()
