"""Storage access for one table's base path, through ``pyarrow.fs``.

All paths given to :class:`Storage` methods are relative to the table's base path and use
``/``. Atomic steps (instant files, hoodie.properties) use :meth:`Storage.create_if_absent`
and :meth:`Storage.write_atomic`; data files use :meth:`Storage.write_bytes`.

On an object store there is no rename and no exclusive create: one PUT replaces an object
atomically (readers see the old or the new content whole), so :meth:`Storage.write_atomic`
is one PUT; :meth:`Storage.create_if_absent` is a conditional PUT (``If-None-Match: *``) on
S3 (:mod:`hudisql.table.io.conditional_put`), and on other stores a check and a PUT that only
a table lock shared by every writer (the catalog's) makes safe.
"""

from __future__ import annotations

import functools
import os
import posixpath
import uuid
from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa
import pyarrow.fs as pafs

from hudisql.table.io.locations import file_system_of, join_location, scheme_of


@dataclass(frozen=True)
class FileStatus:
    """One entry of a directory listing: its path relative to the base path, size, kind."""

    path: str
    size: int
    is_dir: bool
    mtime: datetime | None = None

    @property
    def name(self) -> str:
        """The last component of the path."""
        return posixpath.basename(self.path)


class Storage:
    """Reads and writes files under one base path (local path or ``scheme://`` URI)."""

    def __init__(self, base_uri: str) -> None:
        base_uri = str(base_uri)
        #: The URI scheme (``s3``, ``gs``, ...), ``""`` on the local file system.
        self.scheme: str = scheme_of(base_uri)
        if self.scheme:
            fs, path = _remote_file_system(base_uri)
            self._local = False
        else:
            path = os.path.abspath(base_uri.removeprefix("file://"))
            fs = pafs.LocalFileSystem()
            self._local = True
        self.fs: pafs.FileSystem = fs
        self.base_path: str = path.rstrip("/") or "/"
        self.base_uri: str = base_uri

    def __reduce__(self) -> tuple[type[Storage], tuple[str]]:
        # Storage objects travel to Spark executors; rebuild the file system there.
        return (Storage, (self.base_uri,))

    @property
    def is_local(self) -> bool:
        """True on the local file system (rename and exclusive create exist there)."""
        return self._local

    def full_path(self, rel: str) -> str:
        """The file system path of ``rel`` (relative to the base path): without the scheme
        on an object store (``bucket/key``), as ``pyarrow.fs`` takes it."""
        return posixpath.join(self.base_path, rel) if rel else self.base_path

    def uri(self, rel: str = "") -> str:
        """Where ``rel`` is for other readers (Spark, hudi-rs): its local path, or its URI
        with the scheme (``s3://bucket/key``)."""
        if self._local:
            return self.full_path(rel)
        return join_location(self.base_uri, rel) if rel else self.base_uri

    def exists(self, rel: str) -> bool:
        """True when a file or directory exists at ``rel``."""
        return bool(self.fs.get_file_info(self.full_path(rel)).type != pafs.FileType.NotFound)

    def is_file(self, rel: str) -> bool:
        """True when a regular file exists at ``rel``."""
        return bool(self.fs.get_file_info(self.full_path(rel)).type == pafs.FileType.File)

    def size(self, rel: str) -> int:
        """The size in bytes of the file at ``rel``; raises FileNotFoundError if absent."""
        info = self.fs.get_file_info(self.full_path(rel))
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(self.full_path(rel))
        return int(info.size or 0)

    def read_bytes(self, rel: str) -> bytes:
        """The whole content of the file at ``rel``; raises FileNotFoundError if absent."""
        if self.scheme == "s3":
            from hudisql.table.io.conditional_put import get_bytes

            data = get_bytes(self.base_uri, self.full_path(rel))
            if data is not None:
                return data
        with self.fs.open_input_stream(self.full_path(rel)) as f:
            return bytes(f.read())

    def open_input_file(self, rel: str) -> pa.NativeFile:
        """A random-access file for ``rel`` (for parquet footers and log scans)."""
        return self.fs.open_input_file(self.full_path(rel))

    def list_dir(self, rel: str = "") -> list[FileStatus]:
        """The direct children of directory ``rel``, or [] when it does not exist."""
        selector = pafs.FileSelector(self.full_path(rel), allow_not_found=True, recursive=False)
        return self._statuses(selector)

    def list_recursive(self, rel: str = "") -> list[FileStatus]:
        """Every file and directory below ``rel``, or [] when it does not exist."""
        selector = pafs.FileSelector(self.full_path(rel), allow_not_found=True, recursive=True)
        return self._statuses(selector)

    def _statuses(self, selector: pafs.FileSelector) -> list[FileStatus]:
        prefix = self.base_path.rstrip("/") + "/"
        out = []
        for info in self.fs.get_file_info(selector):
            path = info.path
            rel = path[len(prefix) :] if path.startswith(prefix) else path
            is_dir = info.type == pafs.FileType.Directory
            out.append(FileStatus(rel, int(info.size or 0), is_dir, info.mtime))
        return out

    def makedirs(self, rel: str) -> None:
        """Create directory ``rel`` and its parents (no error if it exists)."""
        self.fs.create_dir(self.full_path(rel), recursive=True)

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Write ``data`` to ``rel``, replacing any file there (not atomic: for data files)."""
        parent = posixpath.dirname(rel)
        if parent and self._local:  # an object store has no directories to make
            self.makedirs(parent)
        with self.fs.open_output_stream(self.full_path(rel)) as f:
            f.write(data)

    def write_atomic(self, rel: str, data: bytes) -> None:
        """Replace ``rel`` with ``data`` atomically: write a temporary file, then rename it
        (on an object store, one PUT, which replaces an object atomically)."""
        if not self._local:
            self.write_bytes(rel, data)
            return
        tmp = self._temp_name(rel)
        self.write_bytes(tmp, data)
        try:
            self.fs.move(self.full_path(tmp), self.full_path(rel))
        except BaseException:
            self._remove_quietly(tmp)
            raise

    def create_if_absent(self, rel: str, data: bytes) -> None:
        """Create ``rel`` with ``data`` only if no file exists there, atomically.

        On S3, a conditional PUT (``If-None-Match: *``): the store refuses it when the
        object exists. On another object store, a check then a PUT: two writers can both
        pass the check unless a table lock shared by both (the catalog's) orders them.

        Raises:
            FileExistsError: a file already exists at ``rel`` (another writer was first).
        """
        if not self._local:
            self._create_remote(rel, data)
            return
        tmp = self._temp_name(rel)
        self.write_bytes(tmp, data)
        try:
            # link(2) fails if the target exists: readers never see a partial file and
            # two writers can never both create it.
            os.link(self.full_path(tmp), self.full_path(rel))
        finally:
            self._remove_quietly(tmp)

    def _create_remote(self, rel: str, data: bytes) -> None:
        from hudisql.table.io.conditional_put import conditional_put_supported, put_if_absent

        if conditional_put_supported(self.scheme):
            put_if_absent(self.base_uri, self.full_path(rel), data)
            return
        if self.exists(rel):
            raise FileExistsError(self.uri(rel))
        self.write_bytes(rel, data)

    def delete(self, rel: str) -> None:
        """Delete the file at ``rel`` (no error if it is already gone)."""
        self._remove_quietly(rel)

    def delete_dir(self, rel: str) -> None:
        """Delete directory ``rel`` and everything below it (no error if absent)."""
        if self.exists(rel):
            self.fs.delete_dir(self.full_path(rel))

    def _remove_quietly(self, rel: str) -> None:
        try:
            self.fs.delete_file(self.full_path(rel))
        except FileNotFoundError:
            pass
        except OSError:
            if self.exists(rel):
                raise

    @staticmethod
    def _temp_name(rel: str) -> str:
        parent, name = posixpath.split(rel)
        return posixpath.join(parent, f".{name}.{uuid.uuid4().hex}.tmp")


#: Settings of the environment an S3 file system is made from (pyarrow reads them once).
_S3_ENVIRONMENT = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID",
                   "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
                   "AWS_DEFAULT_REGION", "AWS_PROFILE")


def _remote_file_system(base_uri: str) -> tuple[pafs.FileSystem, str]:
    """The file system of a URI and the path in it; on S3 one file system per process,
    bucket and settings (a new one resolves the bucket's region and opens connections)."""
    head, _, query = base_uri.partition("?")
    scheme, _, rest = head.partition("://")
    if scheme.lower() != "s3":
        return file_system_of(base_uri)
    bucket = rest.split("/", 1)[0]
    environment = tuple(os.environ.get(name) for name in _S3_ENVIRONMENT)
    # The path in an S3 file system is ``bucket/key``, as pyarrow's from_uri gives it.
    return _s3_file_system(bucket, query, environment), rest.rstrip("/")


@functools.lru_cache(maxsize=64)
def _s3_file_system(bucket: str, query: str,
                    environment: tuple[str | None, ...]) -> pafs.FileSystem:
    fs, _ = file_system_of(f"s3://{bucket}/" + (f"?{query}" if query else ""))
    if isinstance(fs, pafs.S3FileSystem):
        # Delayed open: a small file (an instant, a heartbeat) is one PUT, not the three
        # requests of a multipart upload.
        rebuild, (settings,) = fs.__reduce__()
        fs = rebuild({**settings, "allow_delayed_open": True})
    return fs
