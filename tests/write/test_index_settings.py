"""``hoodie.index.type`` and the bucket layout, resolved from write options and the table's
properties (Spark-free: the Spark tests refuse the same settings before any instant)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudisql.errors import WriteError
from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.write.index_settings import (
    BUCKET_HASH_FIELD,
    BUCKET_NUM,
    DEFAULT_NUM_BUCKETS,
    INDEX_TYPE,
    IndexSettings,
)
from tests.write.conftest import TRIP_SCHEMA


def _table(tmp_path: Path, **props: str) -> HudiTable:
    create_table(str(tmp_path / "t"), "trips", TRIP_SCHEMA, ["uuid", "rider"], "city", "ts",
                 "MERGE_ON_READ", props)
    return HudiTable.open(str(tmp_path / "t"))


@pytest.mark.parametrize("options,props,expected", [
    ({}, {}, IndexSettings("SIMPLE")),
    ({INDEX_TYPE: "bloom"}, {}, IndexSettings("BLOOM")),
    ({}, {INDEX_TYPE: "BLOOM"}, IndexSettings("BLOOM")),
    ({INDEX_TYPE: "SIMPLE"}, {INDEX_TYPE: "BLOOM"}, IndexSettings("SIMPLE")),
    ({}, {INDEX_TYPE: "BUCKET"}, IndexSettings("BUCKET", DEFAULT_NUM_BUCKETS, ("uuid", "rider"))),
    ({BUCKET_NUM: "8"}, {INDEX_TYPE: "BUCKET", BUCKET_NUM: "8", BUCKET_HASH_FIELD: "rider"},
     IndexSettings("BUCKET", 8, ("rider",))),
    ({INDEX_TYPE: "RECORD_INDEX"}, {}, None),  # refused: no record index
], ids=["default", "option", "property", "option-wins", "bucket-default", "bucket", "ri"])
def test_settings_resolve(tmp_path: Path, options: dict[str, str], props: dict[str, str],
                          expected: IndexSettings | None) -> None:
    table = _table(tmp_path, **props)
    if expected is None:
        with pytest.raises(WriteError, match=r"has no record index .*; create it first: "
                           r"CREATE INDEX record_index ON trips \(uuid, rider\)"):
            IndexSettings.resolve(options, table)
        assert IndexSettings.resolve(options, table, lookup=False) == IndexSettings(
            "RECORD_INDEX")
        return
    assert IndexSettings.resolve(options, table) == expected


@pytest.mark.parametrize("options,props,message", [
    ({INDEX_TYPE: "nope"}, {}, r"hoodie.index.type='nope' in the write options is not an"),
    ({}, {INDEX_TYPE: "HBASE"}, r"in its hoodie.properties is an index type hudisql does not"),
    ({INDEX_TYPE: "BUCKET"}, {}, r"table trips was not created with the bucket index"),
    ({BUCKET_NUM: "3"}, {INDEX_TYPE: "BUCKET", BUCKET_NUM: "8"}, r"has 8 buckets .* not 3"),
    ({BUCKET_NUM: "-1"}, {INDEX_TYPE: "BUCKET"}, r"not a positive whole number"),
    ({INDEX_TYPE: "BLOOM"}, {INDEX_TYPE: "BUCKET"}, r"is bucketed .*=BLOOM would scatter"),
    ({}, {INDEX_TYPE: "BUCKET", BUCKET_HASH_FIELD: "fare"}, r"names \['fare'\], which are not"),
], ids=["unknown", "unsupported", "bucket-on-plain", "count", "bad-count", "other-type",
        "hash-field"])
def test_bad_settings_name_the_table_and_the_fix(tmp_path: Path, options: dict[str, str],
                                                 props: dict[str, str], message: str) -> None:
    with pytest.raises(WriteError, match=message):
        IndexSettings.resolve(options, _table(tmp_path, **props))
