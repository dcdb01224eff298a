"""Whether Spark's own readers can open a table's files, decided once per session and scheme.

Base files go to Spark's parquet reader (fast, no Python) only when Spark's Hadoop file
systems open the table's scheme: a pip-installed PySpark has no S3, GCS or Azure connector,
so ``s3://`` files are read by the ``hudi`` data source through ``pyarrow.fs`` instead, with
the same slice pruning and column projection. The setting :data:`SPARK_FILES`
(``auto`` | ``true`` | ``false``, a session conf) overrides the probe; ``auto`` asks Spark
to resolve a path that does not exist under the table: "path does not exist" means Spark
opened the file system, anything else ("No FileSystem for scheme") that it cannot.
"""

from __future__ import annotations

import logging
import threading
import uuid
import weakref
from typing import TYPE_CHECKING

from hudisql.errors import ReadOptionError
from hudisql.table.io.locations import join_location, redact, scheme_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_log = logging.getLogger(__name__)

#: The session conf choosing who reads base files by path: ``auto`` (probe), ``true``
#: (Spark's readers), ``false`` (the ``hudi`` data source through ``pyarrow.fs``).
SPARK_FILES = "hudisql.read.spark.files"
_NOT_FOUND = ("PATH_NOT_FOUND", "Path does not exist", "FileNotFoundException")

_decided: weakref.WeakKeyDictionary[SparkSession, dict[str, bool]] = weakref.WeakKeyDictionary()
_guard = threading.Lock()


def spark_opens(spark: SparkSession, location: str) -> bool:
    """True when Spark's file sources can read files under ``location`` by path.

    A local path always; a URI by :data:`SPARK_FILES`, else by a probe made once per
    session and scheme.

    Raises:
        ReadOptionError: :data:`SPARK_FILES` is not auto, true or false.
    """
    scheme = scheme_of(location)
    if not scheme:
        return True
    setting = (spark.conf.get(SPARK_FILES, None) or "auto").strip().lower()
    if setting in {"true", "false"}:
        return setting == "true"
    if setting != "auto":
        raise ReadOptionError(f"{SPARK_FILES}={setting!r}: use auto, true or false")
    if "?" in location:  # pyarrow's query parameters mean nothing to Hadoop
        return False
    with _guard:
        known = _decided.setdefault(spark, {})
        if scheme in known:
            return known[scheme]
    opens = _probe(spark, location)
    with _guard:
        _decided.setdefault(spark, {})[scheme] = opens
    _log.info("base files under %s:// are read by %s", scheme,
              "Spark's parquet reader" if opens else "the hudi data source (pyarrow.fs)")
    return opens


def _probe(spark: SparkSession, location: str) -> bool:
    missing = join_location(location, f".hoodie/.hudisql-probe-{uuid.uuid4().hex}")
    try:
        spark.read.format("text").load(missing)
    except Exception as exc:
        text = str(exc)
        if any(marker in text for marker in _NOT_FOUND):
            return True
        _log.debug("Spark cannot open %s: %s", redact(location), redact(text.splitlines()[0]))
        return False
    return True  # (a file there after all: Spark opened it)
