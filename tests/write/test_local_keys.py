"""The slices a driver write reads keys from (hudisql.write.local_keys): every slice that
may hold a statement's key, so its tags are those of reading every slice; no Spark."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hudisql.table.table import HudiTable
from hudisql.table.write.create import create_table
from hudisql.table.write.records import PARTITION_PATH, RECORD_KEY
from hudisql.txn.writer import WriteClient
from hudisql.write import local_keys
from hudisql.write.local_write import tag_rows
from hudisql.write.tagging import FILE_ID

SCHEMA = pa.schema([("id", pa.string()), ("v", pa.string()), ("ts", pa.int64())])


def _staged(keys: list[str]) -> pa.Table:
    return pa.table({"id": keys, RECORD_KEY: keys, PARTITION_PATH: [""] * len(keys)})


def test_only_slices_holding_a_key_are_read_and_tags_stay_exact(tmp_path: Path) -> None:
    create_table(tmp_path / "t", "t", SCHEMA, "id", (), "ts", "MERGE_ON_READ")
    client = WriteClient(HudiTable.open(tmp_path / "t"), max_records_per_file=2)
    client.insert([{"id": k, "v": "a", "ts": 1} for k in "012345"])
    client.upsert([{"id": "1", "v": "b", "ts": 2}])  # a data block in a log file
    client.delete(["3"])  # a delete block: the key stays in the base file
    table = HudiTable.open(tmp_path / "t")
    slices = table.file_slices()
    by_key = {}
    for s in slices:
        assert s.base_file is not None
        with table.storage.open_input_file(s.base_file.path) as base:
            for key in pq.read_table(base, columns=[RECORD_KEY]).column(0).to_pylist():
                by_key[key] = s
    logged = next(s for s in slices if s.log_files and by_key["1"] is s)
    assert local_keys.candidate_slices(table.storage, slices, ["1"], True,
                                       table.timeline) == [logged]
    # A log file is kept under its modification time too: a name a later write takes
    # again (after a rollback deleted the file) is read again.
    log = logged.log_files[0]
    assert local_keys.candidate_slices(table.storage, slices, ["9"], True, table.timeline) == []
    kept = [k for k in local_keys._KEPT if k[0] == table.storage.uri(log.path)]
    assert kept and all(len(k) == 4 and k[1] == log.size for k in kept)
    log_hashes = local_keys._held(table.storage, log.path, log.size, None)
    assert log_hashes is not None and local_keys.key_hashes(["1"])[0] in log_hashes
    # A deleted key's slice is still read (deletes only remove): its tag says not stored.
    assert local_keys.candidate_slices(table.storage, slices, ["3"]) == [by_key["3"]]
    assert local_keys.candidate_slices(table.storage, slices, ["9", "x"]) == []
    head = table.timeline.last_completed()
    assert head is not None
    tagged, _ = tag_rows(table, _staged(["0", "1", "3", "5", "9"]), [""], head.timestamp)
    tags = dict(zip(tagged.column("id").to_pylist(), tagged.column(FILE_ID).to_pylist(),
                    strict=True))
    assert tags == {"0": by_key["0"].file_id, "1": by_key["1"].file_id, "3": None,
                    "5": by_key["5"].file_id, "9": None}
    # Base files without the key column: every slice with a base file is read.
    assert local_keys.candidate_slices(table.storage, slices, ["9"], populated=False) == slices
