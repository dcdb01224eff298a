"""The SQL examples of docs/REFERENCE.md run, in the order they are written, on a real session.

The reference's examples are one story about a table ``trips``: they may use the views made
here (``staging``, ``staging_chennai``, ``changes``) and, as placeholders, the path
``/data/hudi/trips`` (a copy of a real Hudi table), the instant ``20250331030645735`` (the
latest completed instant of ``trips``) and the file id
``d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0`` (a file group of ``trips``). An example that
fails here is wrong in the reference (or hudisql changed under it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hudisql.errors import SqlParseError
from hudisql.session import HudiSession
from tests.fixtures import copy_table
from tests.test_reference_docs import REFERENCE, REFUSED, Section, sections, split_statements

EXAMPLE_PATH = "/data/hudi/trips"
EXAMPLE_INSTANT = "20250331030645735"
EXAMPLE_FILE_ID = "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0"
VIEWS = {
    "staging": "SELECT * FROM VALUES (1695159649999L, 'z1', 'rider-Z', 10.0D, 'chennai'), "
               "(1695159649999L, 'z2', 'rider-Y', 11.0D, 'sao_paulo') "
               "AS v(ts, uuid, rider, fare, city)",
    "staging_chennai": "SELECT ts, uuid, rider, fare FROM staging WHERE city = 'chennai'",
    "changes": "SELECT *, uuid = 'z2' AS deleted FROM VALUES "
               "(1695159659999L, 'z1', 'rider-Z', 99.0D, 'chennai'), "
               "(1695159659999L, 'z2', 'rider-Y', 0.0D, 'sao_paulo'), "
               "(1695159659999L, 'n1', 'rider-N', 5.0D, 'chennai') "
               "AS v(ts, uuid, rider, fare, city)",
}


def examples() -> list[tuple[Section, str, bool]]:
    """Every example statement of the Statements and Procedures chapters, in order, with
    whether the reference says it is refused."""
    found = []
    for entry in sections(REFERENCE.read_text()):
        if entry.chapter not in ("Statements", "Procedures"):
            continue
        for block in entry.blocks("sql"):
            for text, key in split_statements(block):
                refused = REFUSED in entry.body and key is not None and entry.covers(key)
                found.append((entry, text, refused))
    return found


def placeholders(session: HudiSession, text: str, path: Path) -> str:
    """``text`` with the reference's placeholders replaced by real values of this run."""
    text = text.replace(EXAMPLE_PATH, str(path))
    if EXAMPLE_INSTANT in text:
        latest = session.sql("CALL show_commits(table => 'trips', limit => 1)").first()
        assert latest is not None
        text = text.replace(EXAMPLE_INSTANT, latest["commit_time"])
    if EXAMPLE_FILE_ID in text:
        block = session.sql("CALL show_log_blocks(table => 'trips')").first()
        if block is None:  # the story's compaction folded every log into base files
            session.sql("UPDATE trips SET fare = 20.0")
            block = session.sql("CALL show_log_blocks(table => 'trips')").first()
        assert block is not None, "an update of a merge-on-read table writes a log block"
        text = text.replace(EXAMPLE_FILE_ID, block["file_id"])
    return text


@pytest.mark.spark
@pytest.mark.slow
def test_every_reference_example_runs_in_order(session: HudiSession, tmp_path: Path) -> None:
    for name, query in VIEWS.items():
        session.spark.sql(f"CREATE OR REPLACE TEMP VIEW {name} AS {query}")
    path = copy_table("v6_trips_8i1u", tmp_path)
    ran = []
    for entry, text, refused in examples():
        text = placeholders(session, text, path)
        if refused:
            with pytest.raises(SqlParseError):
                session.sql(text)
        else:
            session.sql(text).collect()
        ran.append(entry.title)
    assert {"CREATE TABLE", "MERGE INTO", "CALL rollback_to_instant"} <= set(ran)
    # The story's end: the table still reads, with the column ALTER TABLE added.
    assert "tip" in session.sql("SELECT * FROM trips").columns
