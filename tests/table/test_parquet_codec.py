"""Base files take their codec from ``hoodie.parquet.compression.codec`` (default gzip)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudisql.errors import WriteError
from hudisql.table import HudiTable
from hudisql.table.write.files import COMPRESSION_CODEC
from hudisql.txn.writer import WriteClient, create_table

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64())])
ROWS = pa.table({"id": ["a", "b"], "ts": [1, 2]}, schema=SCHEMA)


def _codecs(path: str) -> set[str]:
    return {pq.ParquetFile(f).metadata.row_group(0).column(0).compression
            for f in Path(path).rglob("*.parquet")}


@pytest.mark.parametrize(("option", "stored"), [(None, "GZIP"), ("snappy", "SNAPPY"),
                                                ("ZSTD", "ZSTD"), ("uncompressed", "UNCOMPRESSED")])
def test_base_files_use_the_configured_codec(tmp_path: Path, option: str | None,
                                             stored: str) -> None:
    path = str(tmp_path / "t")
    create_table(path, "t", SCHEMA, "id", (), "ts", "COPY_ON_WRITE")
    options = {COMPRESSION_CODEC: option} if option else {}
    WriteClient(HudiTable.open(path), options=options).insert(ROWS)
    assert _codecs(path) == {stored}


def test_an_unknown_codec_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    create_table(path, "t", SCHEMA, "id", (), "ts", "COPY_ON_WRITE")
    before = sorted(p.relative_to(path) for p in Path(path).rglob("*"))
    with pytest.raises(WriteError, match=r"hoodie\.parquet\.compression\.codec='lzma'"):
        WriteClient(HudiTable.open(path), options={COMPRESSION_CODEC: "lzma"})
    assert sorted(p.relative_to(path) for p in Path(path).rglob("*")) == before
