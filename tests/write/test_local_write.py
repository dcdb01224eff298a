"""Small DML statements written by the driver (hudisql.write.local_write) give the table the
same rows as the Spark pipeline, and only they are written with the driver's write token."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from hudisql.errors import WriteError
from hudisql.session import HudiSession, HudiTableHandle
from hudisql.write.driver_write import DRIVER_MAX_RECORDS
from hudisql.write.local_write import LOCAL_MAX_RECORDS
from tests.write.trips import Row, frame, spark_rows

pytestmark = pytest.mark.spark

SEED: list[Row] = [("a", 1, "ann", 10.0, "sf"), ("b", 1, "bob", 20.0, "sf"),
                   ("c", 1, "cid", 30.0, "la"), ("d", 1, "dan", 40.0, "la")]
#: The write token of files the driver writes (task partition 0, stage 0, attempt 0), at the
#: end of a log file's name or before a base file's instant.
DRIVER_TOKEN = re.compile(r"_0-0-0(_|$)")


def _driver_files(handle: HudiTableHandle) -> set[str]:
    return {p.name for p in Path(handle.path).rglob("*") if p.is_file()
            and DRIVER_TOKEN.search(p.name) and ".hoodie" not in p.parts}


def _statements(handle: HudiTableHandle, session: HudiSession, **options: str) -> None:
    handle.insert(frame(session, SEED), **options)
    handle.update({"ts": "ts + 1"}, "uuid = 'a'", **options)  # an expression write
    handle.update({"rider": "upper(rider)"}, "fare > 25", **options)
    handle.delete("uuid = 'b'", **options)
    source = frame(session, [("c", 5, "new", 1.0, "la"), ("e", 5, "eve", 50.0, "ny")])
    (handle.merge(source, "t.uuid = s.uuid", **options).when_matched_update_all()
     .when_not_matched_insert_all().execute())


@pytest.mark.slow
@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_driver_writes_match_the_spark_pipeline(
    hudi_session: HudiSession, new_table: Callable[..., HudiTableHandle], table_type: str
) -> None:
    local = new_table(table_type, name="local")
    spark = new_table(table_type, name="spark")
    _statements(local, hudi_session)
    _statements(spark, hudi_session, **{LOCAL_MAX_RECORDS: "0", DRIVER_MAX_RECORDS: "0"})
    assert spark_rows(local) == spark_rows(spark)
    assert _driver_files(local) and not _driver_files(spark)
    with pytest.raises(WriteError, match=f"{LOCAL_MAX_RECORDS}='many'"):
        local.delete("uuid = 'a'", **{LOCAL_MAX_RECORDS: "many"})
    assert spark_rows(local) == spark_rows(spark)
