"""Table and warehouse locations: local paths and ``scheme://`` URIs kept apart.

A location is a local path (or ``file:`` URI) or any URI ``pyarrow.fs`` opens (``s3://``,
``gs://``, ``abfs://``, ``hdfs://``). A URI keeps its scheme end to end: joining names under
it, comparing two, and showing it never turn it into a local path. Credentials never belong
in a location (the catalog stores it and ``SHOW`` prints it): they come from the environment
(``AWS_*``, ``GOOGLE_APPLICATION_CREDENTIALS``, ``AZURE_STORAGE_*``), and a location carrying
one is refused. :func:`check_location` tells before anything is written whether a location
can be reached, with an error naming it and what to set.
"""

from __future__ import annotations

import os
import posixpath
import re
from urllib.parse import parse_qsl, unquote, urlsplit

import pyarrow.fs as pafs

from hudisql.errors import StorageLocationError

#: Schemes whose first path component is a bucket (or container) that must exist.
BUCKET_SCHEMES = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az"})
#: Query parameters of ``pyarrow.fs`` URIs that carry a secret.
SECRET_PARAMETERS = frozenset({
    "access_key", "secret_key", "session_token", "account_key", "sas_token", "password",
})
#: What to set per scheme, named in errors.
CREDENTIAL_HINTS = {
    "s3": "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), AWS_REGION, and "
          "AWS_ENDPOINT_URL for an S3-compatible server",
    "gs": "GOOGLE_APPLICATION_CREDENTIALS (a service account key file)",
    "abfs": "AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY (or an Azure identity)",
    "hdfs": "HADOOP_HOME, CLASSPATH and the HDFS client configuration",
}
_HINT_OF = {"s3a": "s3", "gcs": "gs", "abfss": "abfs", "az": "abfs"}
_SECRET_QUERY = re.compile(r"(?i)\b(" + "|".join(sorted(SECRET_PARAMETERS)) + r")=[^&\s'\"]*")
_USERINFO = re.compile(r"(://[^/@:\s'\"]+):[^/@\s'\"]+@")


def scheme_of(location: str) -> str:
    """The URI scheme of ``location`` in lower case, or ``""`` for a local path."""
    text = str(location)
    if "://" not in text:
        return ""
    scheme = text.split("://", 1)[0].lower()
    return "" if scheme == "file" else scheme


def is_remote(location: str) -> bool:
    """True when ``location`` is a URI of a store other than the local file system."""
    return bool(scheme_of(location))


def absolute_location(location: str | os.PathLike[str]) -> str:
    """One spelling of ``location``: a local path becomes absolute and normalized; a URI
    keeps its scheme and loses a trailing ``/``."""
    text = os.fspath(location)
    if is_remote(text):
        base, sep, query = text.partition("?")
        return (base.rstrip("/") or base) + sep + query
    if text.startswith("file:"):
        text = unquote(text.removeprefix("file:"))
        if text.startswith("//"):
            text = text[2:].removeprefix("localhost")
    return os.path.normpath(os.path.abspath(text))


def join_location(base: str, *names: str) -> str:
    """``names`` below ``base``: ``/``-joined under a URI (before its query), else a local
    path join."""
    if not is_remote(base):
        return os.path.join(base, *names)
    head, sep, query = base.partition("?")
    return posixpath.join(head.rstrip("/"), *names) + sep + query


def redact(text: str) -> str:
    """``text`` with every secret a URI may carry (``secret_key=...``, ``user:pass@``)
    replaced by ``***``: for messages and logs."""
    return _USERINFO.sub(r"\1:***@", _SECRET_QUERY.sub(r"\1=***", str(text)))


def credential_hint(location: str) -> str:
    """What to set so that ``location``'s store accepts this process."""
    scheme = scheme_of(location)
    return CREDENTIAL_HINTS.get(_HINT_OF.get(scheme, scheme),
                                f"the credentials pyarrow's file system for {scheme}:// reads")


def refuse_secrets(location: str) -> None:
    """Raise when ``location`` carries a credential (it would be stored and shown).

    Raises:
        StorageLocationError: a secret query parameter or a ``user:password@`` part.
    """
    if not is_remote(location):
        return
    parts = urlsplit(str(location))
    secrets = sorted({k for k, _ in parse_qsl(parts.query) if k.lower() in SECRET_PARAMETERS})
    if parts.password is not None:
        secrets.append("password")
    if secrets:
        raise StorageLocationError(
            f"location {redact(location)} carries credentials ({', '.join(secrets)}); a "
            "location is stored in the catalog and shown by SHOW statements: remove them from "
            f"it and set {credential_hint(location)} in the environment instead")


def file_system_of(location: str) -> tuple[pafs.FileSystem, str]:
    """The ``pyarrow.fs`` file system of a URI and the path in it.

    Raises:
        StorageLocationError: pyarrow knows no file system for the scheme, or the URI is
            malformed.
    """
    try:
        fs, path = pafs.FileSystem.from_uri(str(location))
    except (ValueError, OSError) as exc:  # ArrowInvalid is a ValueError
        raise StorageLocationError(
            f"location {redact(location)} cannot be opened: {redact(str(exc))}; use a local "
            "path or a URI pyarrow.fs opens (s3://bucket/path, gs://bucket/path, "
            "abfs://container@account.dfs.core.windows.net/path, hdfs://host/path)"
        ) from None
    return fs, path


def check_location(location: str) -> None:
    """Make sure ``location`` can be written before anything is: a known scheme, no
    credentials in it, its bucket present and the store answering with these credentials.

    A local path is always accepted (its directories are made when written).

    Raises:
        StorageLocationError: naming the location and what to set.
    """
    if not is_remote(location):
        return
    refuse_secrets(location)
    fs, path = file_system_of(location)
    scheme = scheme_of(location)
    bucket = path.split("/", 1)[0]
    try:
        if scheme in BUCKET_SCHEMES and fs.get_file_info(bucket).type == pafs.FileType.NotFound:
            raise StorageLocationError(
                    f"location {redact(location)}: bucket {bucket!r} does not exist (or is not "
                    f"visible with these credentials); create it, fix the location, or set "
                    f"{credential_hint(location)}")
        info = fs.get_file_info(path)
    except OSError as exc:
        raise StorageLocationError(
            f"location {redact(location)} cannot be reached: {redact(str(exc))}; set "
            f"{credential_hint(location)}") from None
    if info.type == pafs.FileType.File:
        raise StorageLocationError(
            f"location {redact(location)} is a file, not a directory: choose another location")
