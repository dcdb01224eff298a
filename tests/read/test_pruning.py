"""Partition pruning from pushed filters: which filters are exact, which partitions are kept."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

from hudisql.errors import HudiSqlError
from hudisql.read.pruning import DEFAULT_PARTITION, PartitionPruner, select_slices
from hudisql.table.format.properties import TableProperties
from hudisql.table.table import HudiTable
from tests.fixtures import table_path

SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("year", pa.int32()),
                    ("ts", pa.timestamp("us")), ("fare", pa.float64())])


def pruner(fields: str = "city", hive: bool = True, keygen: str = "SimpleKeyGenerator",
           urlencode: bool = False) -> PartitionPruner:
    props = TableProperties({
        "hoodie.table.partition.fields": fields,
        "hoodie.datasource.write.hive_style_partitioning": str(hive).lower(),
        "hoodie.table.keygenerator.class": f"org.apache.hudi.keygen.{keygen}",
        "hoodie.datasource.write.partitionpath.urlencode": str(urlencode).lower(),
    })
    return PartitionPruner.for_table(props, SCHEMA)


@pytest.mark.parametrize(("flt", "accepted"), [
    (EqualTo(("city",), "sf"), True),
    (Not(EqualTo(("city",), "sf")), True),
    (In(("city",), ("sf", "la")), True),
    (IsNull(("city",)), True),
    (StringStartsWith(("city",), "s"), True),
    (EqualTo(("fare",), 1.0), False),          # not a partition column
    (EqualTo(("city",), 3), False),            # literal of another type
    (EqualTo(("city", "x"), "sf"), False),     # nested reference
    (In(("city",), ("sf", 1)), False),
])
def test_accepts_only_filters_decided_by_the_path(flt: Filter, accepted: bool) -> None:
    assert pruner().accepts(flt) is accepted


def test_integer_partition_columns_are_exact_but_not_timestamps() -> None:
    p = pruner("year,ts")
    assert p.accepts(GreaterThan(("year",), 2020))
    assert not p.accepts(StringStartsWith(("year",), "20"))
    assert not p.accepts(EqualTo(("year",), True))
    assert not p.accepts(EqualTo(("ts",), "2024-01-01"))


def test_custom_key_generators_prune_nothing() -> None:
    p = pruner(keygen="TimestampBasedKeyGenerator")
    assert not p.accepts(EqualTo(("city",), "sf"))


@pytest.mark.parametrize(("path", "flt", "kept"), [
    ("city=sf", EqualTo(("city",), "sf"), True),
    ("city=la", EqualTo(("city",), "sf"), False),
    ("city=la", Not(EqualTo(("city",), "sf")), True),
    ("city=sf", In(("city",), ("la", "sf")), True),
    ("city=ny", In(("city",), ("la", "sf")), False),
    ("city=sao_paulo", StringStartsWith(("city",), "sao"), True),
    ("city=sao_paulo", StringEndsWith(("city",), "paulo"), True),
    ("city=chennai", StringContains(("city",), "paulo"), False),
    ("city=b", GreaterThanOrEqual(("city",), "b"), True),
    ("city=a", GreaterThanOrEqual(("city",), "b"), False),
    (f"city={DEFAULT_PARTITION}", IsNull(("city",)), True),
    (f"city={DEFAULT_PARTITION}", IsNotNull(("city",)), False),
    (f"city={DEFAULT_PARTITION}", EqualTo(("city",), "sf"), False),
    (f"city={DEFAULT_PARTITION}", Not(EqualTo(("city",), "sf")), False),  # NULL is not TRUE
    (f"city={DEFAULT_PARTITION}", EqualNullSafe(("city",), None), True),
])
def test_keeps_partition_iff_filter_is_true_for_its_value(path: str, flt: Filter,
                                                          kept: bool) -> None:
    assert pruner().keeps(path, [flt]) is kept


def test_non_hive_style_multi_level_and_integer_values() -> None:
    p = pruner("city,year", hive=False)
    assert p.values("sf/2024") == {"city": "sf", "year": 2024}
    assert p.keeps("sf/2024", [EqualTo(("city",), "sf"), LessThan(("year",), 2025)])
    assert not p.keeps("sf/2024", [EqualTo(("city",), "sf"), LessThan(("year",), 2024)])


def test_url_encoded_values_are_decoded() -> None:
    p = pruner(urlencode=True)
    assert p.values("city=san%20francisco") == {"city": "san francisco"}
    assert p.keeps("city=san%20francisco", [EqualTo(("city",), "san francisco")])


@pytest.mark.parametrize("path", ["", "sf", "town=sf", "city=sf/extra", "year=x"])
def test_unreadable_paths_are_reported_and_kept(path: str) -> None:
    p = pruner() if path != "year=x" else pruner("year")
    assert p.values(path) is None
    assert p.keeps(path, [EqualTo(("city",), "nowhere")])


def test_an_instant_to_the_second_means_its_whole_second() -> None:
    from hudisql.read.options import normalize_instant
    from hudisql.table.table import normalize_as_of

    for text in ("20250331030642", "2025-03-31 03:06:42", "20250331030642808",
                 "2025-03-31 03:06:42.8"):
        assert normalize_instant(text) == normalize_as_of(text)
    assert normalize_instant("20250331030642") == "20250331030642999"
    assert normalize_instant("2025-03-31") == "20250331000000000"


def test_select_slices_prunes_partitions_by_a_fixed_predicate() -> None:
    table = HudiTable.open(str(table_path("v6_trips_8i1u")))
    slices = table.file_slices()
    chennai = select_slices(table, slices, "city = 'chennai' AND fare > 1")
    assert [s.partition_path for s in chennai.kept] == ["city=chennai"]
    assert chennai.total == len(slices) == 3
    assert chennai.describe() == "kept 1 of 3 file slices (partition 3->1)"
    assert len(select_slices(table, slices, "city LIKE 's%' OR fare > 1").kept) == 3
    assert len(select_slices(table, slices, "city IN ('x', 'sao_paulo')",
                             data_skipping=False).kept) == 1
    assert select_slices(table, slices, None).kept == slices


def test_select_slices_refuses_text_that_is_no_predicate() -> None:
    table = HudiTable.open(str(table_path("v6_trips_8i1u")))
    with pytest.raises(HudiSqlError):
        select_slices(table, table.file_slices(), "city = = 'x'")
