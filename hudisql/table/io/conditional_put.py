"""Create-if-absent on S3: a PUT with ``If-None-Match: *``, which the store refuses (412)
when the object exists, so two writers can never both create one instant file. And a whole
small object in one GET (pyarrow asks for its size first: a HEAD more per instant read).

``pyarrow.fs`` cannot send the header; boto3 can (the ``s3`` extra). The client is made
once per process and endpoint from the same settings pyarrow reads: the ``AWS_*``
environment (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_REGION``, ``AWS_PROFILE``) and the location's ``endpoint_override``, ``scheme`` and
``region`` query parameters.
"""

from __future__ import annotations

import os
import threading
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from hudisql.errors import StorageLocationError
from hudisql.table.io.locations import redact

#: Schemes served by an S3 API that honours ``If-None-Match: *`` on PUT.
CONDITIONAL_PUT_SCHEMES = frozenset({"s3", "s3a"})
#: Error codes that mean the object exists (412), or that a concurrent conditional PUT of
#: the same key is in progress (409): either way another writer was first.
_EXISTS_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "412", "409"})

_clients: dict[tuple[str, str, int], Any] = {}
_clients_lock = threading.Lock()


def conditional_put_supported(scheme: str) -> bool:
    """True when ``scheme``'s store takes conditional PUTs (S3)."""
    return scheme in CONDITIONAL_PUT_SCHEMES


def put_if_absent(base_uri: str, full_path: str, data: bytes) -> None:
    """Create the object ``full_path`` (``bucket/key``) with ``data`` unless it exists.

    Raises:
        FileExistsError: the object exists (another writer created it first).
        StorageLocationError: boto3 is not installed.
        OSError: the store refused the request for another reason.
    """
    client = _client(base_uri)
    bucket, _, key = full_path.partition("/")
    from botocore.exceptions import ClientError

    try:
        client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
        if code in _EXISTS_CODES or status in {"412", "409"}:
            raise FileExistsError(f"s3://{full_path}") from None
        raise OSError(f"PUT s3://{full_path} failed: {redact(str(exc))}") from None


def get_bytes(base_uri: str, full_path: str) -> bytes | None:
    """The whole object ``full_path`` (``bucket/key``) in one GET; None without boto3.

    Raises:
        FileNotFoundError: no such object.
        OSError: the store refused the request.
    """
    try:
        client = _client(base_uri)
    except StorageLocationError:
        return None
    from botocore.exceptions import ClientError

    bucket, _, key = full_path.partition("/")
    try:
        return bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in {"NoSuchKey", "404", "NotFound"}:
            raise FileNotFoundError(f"s3://{full_path}") from None
        raise OSError(f"GET s3://{full_path} failed: {redact(str(exc))}") from None


def _client(base_uri: str) -> Any:
    query = dict(parse_qsl(urlsplit(base_uri).query))
    endpoint = query.get("endpoint_override", "")
    if endpoint and "://" not in endpoint:
        endpoint = f"{query.get('scheme', 'https')}://{endpoint}"
    region = query.get("region", "")
    key = (endpoint, region, os.getpid())  # a forked worker makes its own connections
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            try:
                import boto3
            except ImportError:
                raise StorageLocationError(
                    f"table at {redact(base_uri)}: creating an instant file on S3 needs a "
                    "conditional PUT, which needs boto3: pip install 'hudisql[s3]'") from None
            kwargs: dict[str, str] = {}
            if endpoint:
                kwargs["endpoint_url"] = endpoint
            if region:
                kwargs["region_name"] = region
            client = boto3.session.Session().client("s3", **kwargs)
            _clients[key] = client
    return client
