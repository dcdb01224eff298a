"""Names of the data files of a Hudi table: base files, log files, write tokens and file ids.

A base file is ``<fileId>_<writeToken>_<instant>.<extension>`` and a log file is
``.<fileId>_<baseInstant>.log.<version>_<writeToken>`` (``archive`` instead of ``log`` in
old archived timelines, a ``.cdc`` suffix for change-data files); see docs/FORMAT.md.
"""

from __future__ import annotations

import posixpath
import re
import uuid
from dataclasses import dataclass

__all__ = [
    "BaseFileName",
    "LogFileName",
    "new_file_id",
    "parse_data_file_name",
    "write_token",
]

# Anchored at both ends, unlike Hudi's own pattern: temporary files made by
# Storage.create_if_absent (".<name>.<hex>.tmp") must never pass for log files.
_LOG_NAME = re.compile(
    r"^\.(?P<file_id>[^_/]+)_(?P<base_instant>[^_/]*)\.(?P<extension>log|archive)"
    r"\.(?P<version>\d+)(?:_(?P<write_token>\d+-\d+-\d+))?(?P<cdc>\.cdc)?$"
)
_BASE_NAME = re.compile(
    r"^(?P<file_id>[^._/][^_/]*)_(?P<write_token>\d+-\d+-\d+)_(?P<instant>\d+)"
    r"\.(?P<extension>[A-Za-z0-9]+)$"
)


@dataclass(frozen=True)
class BaseFileName:
    """The parts of a base file name ``<fileId>_<writeToken>_<instant>.<extension>``."""

    file_id: str
    write_token: str
    instant: str
    extension: str = "parquet"

    @classmethod
    def parse(cls, name: str) -> BaseFileName | None:
        """Parse a base file name (a directory part is ignored).

        Returns:
            The parts, or None when ``name`` is not a base file name.
        """
        m = _BASE_NAME.match(posixpath.basename(name))
        if m is None:
            return None
        return cls(m["file_id"], m["write_token"], m["instant"], m["extension"])

    def format(self) -> str:
        """The file name (no directory)."""
        return f"{self.file_id}_{self.write_token}_{self.instant}.{self.extension}"


@dataclass(frozen=True)
class LogFileName:
    """The parts of a log file name ``.<fileId>_<baseInstant>.log.<version>_<writeToken>``."""

    file_id: str
    base_instant: str
    version: int
    write_token: str | None
    extension: str = "log"
    cdc: bool = False

    @classmethod
    def parse(cls, name: str) -> LogFileName | None:
        """Parse a log file name (a directory part is ignored).

        Returns:
            The parts, or None when ``name`` is not a log file name.
        """
        m = _LOG_NAME.match(posixpath.basename(name))
        if m is None:
            return None
        return cls(
            file_id=m["file_id"],
            base_instant=m["base_instant"],
            version=int(m["version"]),
            write_token=m["write_token"],
            extension=m["extension"],
            cdc=m["cdc"] is not None,
        )

    def format(self) -> str:
        """The file name (no directory)."""
        name = f".{self.file_id}_{self.base_instant}.{self.extension}.{self.version}"
        if self.write_token is not None:
            name += f"_{self.write_token}"
        return name + (".cdc" if self.cdc else "")

    def sort_key(self) -> tuple[str, int, str, bool]:
        """The order of log files within a file group, as Hudi's log file comparator has it.

        Returns:
            ``(base_instant, version, write_token, cdc)``: later files sort after earlier ones.
        """
        return (self.base_instant, self.version, self.write_token or "", self.cdc)

    def with_version(self, version: int) -> LogFileName:
        """The same name with another version number."""
        return LogFileName(
            self.file_id, self.base_instant, version, self.write_token, self.extension, self.cdc
        )


def parse_data_file_name(name: str) -> BaseFileName | LogFileName | None:
    """Parse the name of a base file or a log file.

    Returns:
        A :class:`BaseFileName` or :class:`LogFileName`, or None for any other file.
    """
    return LogFileName.parse(name) or BaseFileName.parse(name)


def write_token(partition_id: int, stage_id: int, attempt_id: int) -> str:
    """The write token of a Spark task attempt: ``<partitionId>-<stageId>-<taskAttemptId>``.

    Raises:
        ValueError: a part is negative.
    """
    parts = (partition_id, stage_id, attempt_id)
    if any(int(p) < 0 for p in parts):
        raise ValueError(f"write token parts must be non-negative, got {parts}")
    return "-".join(str(int(p)) for p in parts)


def new_file_id() -> str:
    """A new file id: a random UUID plus ``-0``, as Hudi names new file groups."""
    return f"{uuid.uuid4()}-0"
