"""File names of base and log files: parsing the fixtures' names, formatting, ordering."""

from __future__ import annotations

import re

import pytest

from hudisql.table.format.filenames import (
    BaseFileName,
    LogFileName,
    new_file_id,
    parse_data_file_name,
    write_token,
)
from tests.fixtures import table_path


def test_base_file_name_of_fixture_parses_into_its_parts() -> None:
    name = "a079bdb3-731c-4894-b855-abfcd6921007-0_0-182-253_20240418173550988.parquet"
    parsed = BaseFileName.parse(name)
    assert parsed == BaseFileName(
        "a079bdb3-731c-4894-b855-abfcd6921007-0", "0-182-253", "20240418173550988", "parquet"
    )
    assert parsed.format() == name


def test_log_file_name_of_fixture_parses_into_its_parts() -> None:
    name = ".0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.2_1-0-1"
    parsed = LogFileName.parse(f"some/partition/{name}")
    assert parsed == LogFileName(
        "0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0", "20250126040823628", 2, "1-0-1", "log", False
    )
    assert parsed.format() == name


@pytest.mark.parametrize(
    "name",
    [
        ".f1-0_20250101000000000.log.12_3-4-5",
        ".f1-0_20250101000000000.log.1",  # old files have no write token
        ".f1-0_20250101000000000.archive.7_0-0-0",
        ".f1-0_20250101000000000.log.1_0-1-2.cdc",
    ],
)
def test_log_file_names_round_trip(name: str) -> None:
    parsed = LogFileName.parse(name)
    assert parsed is not None
    assert parsed.format() == name


@pytest.mark.parametrize(
    "name",
    [
        "f1-0_0-1-2_20250101000000000.parquet",  # a base file
        ".hoodie_partition_metadata",
        # a temporary file Storage.create_if_absent makes next to a log file
        "..f1-0_20250101000000000.log.1_0-1-2.3f2a.tmp",
        ".f1-0_20250101000000000.log.x_0-1-2",
        ".f1-0_20250101000000000.log.1_0-1-2.crc",
    ],
)
def test_non_log_names_are_not_log_files(name: str) -> None:
    assert LogFileName.parse(name) is None


@pytest.mark.parametrize(
    "name",
    [
        ".f1-0_20250101000000000.log.1_0-1-2",
        "f1-0_20250101000000000.parquet",  # no write token
        "f1-0_0-1-2_2025x.parquet",
        ".hidden_0-1-2_20250101000000000.parquet",
    ],
)
def test_non_base_names_are_not_base_files(name: str) -> None:
    assert BaseFileName.parse(name) is None


def test_every_data_file_of_every_fixture_table_parses(fixture_table_name: str) -> None:
    root = table_path(fixture_table_name)
    data_files = [
        p for p in root.rglob("*")
        if p.is_file() and ".hoodie" not in p.relative_to(root).parts
        and p.name != ".hoodie_partition_metadata"
    ]
    assert data_files
    for path in data_files:
        parsed = parse_data_file_name(path.name)
        assert parsed is not None, path.name
        assert parsed.format() == path.name
        # The file id is a UUID plus "-0" in every fixture.
        assert re.fullmatch(r"[0-9a-f-]{36}-0", parsed.file_id)


def test_log_files_sort_by_base_instant_then_version_then_token() -> None:
    names = [
        ".f_2.log.1_0-1-1", ".f_1.log.10_0-1-1", ".f_1.log.2_1-1-1", ".f_1.log.2_0-1-1",
    ]
    parsed = [LogFileName.parse(n) for n in names]
    ordered = sorted((p for p in parsed if p is not None), key=LogFileName.sort_key)
    assert [p.format() for p in ordered] == [
        ".f_1.log.2_0-1-1", ".f_1.log.2_1-1-1", ".f_1.log.10_0-1-1", ".f_2.log.1_0-1-1",
    ]


def test_with_version_changes_only_the_version() -> None:
    name = LogFileName("f-0", "20250101000000000", 1, "0-1-2")
    assert name.with_version(5).format() == ".f-0_20250101000000000.log.5_0-1-2"


def test_write_token_and_file_id_have_hudis_shapes() -> None:
    assert write_token(0, 13, 60) == "0-13-60"
    with pytest.raises(ValueError, match="non-negative"):
        write_token(0, -1, 2)
    ids = {new_file_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}-0", i)
               for i in ids)
