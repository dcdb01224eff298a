"""The timeline picture of a table the services worked on: writes, a rollback, an index build
and a compaction, drawn inline and by ``hudisql timeline`` (PNG and HTML) with every instant.

Issue #16's "done when": the picture is produced by the shell and in a notebook and has the
instants. The table is written through SQL on the shared SparkSession (index builds need
Spark); the shell runs in a subprocess, as a user runs it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hudisql.session import HudiSession


def test_picture_has_writes_rollback_index_build_and_compaction(
    session: HudiSession, tmp_path: Path,
) -> None:
    session.sql("CREATE TABLE t (id INT, v STRING, ts BIGINT, city STRING) USING hudi "
                "PARTITIONED BY (city) TBLPROPERTIES (type = 'mor', primaryKey = 'id', "
                "preCombineField = 'ts')")
    session.sql("INSERT INTO t VALUES (1, 'a', 1, 'sf'), (2, 'b', 1, 'la')")
    session.sql("UPDATE t SET v = 'u', ts = 2 WHERE id = 1")
    session.sql("UPDATE t SET v = 'oops', ts = 3 WHERE id = 2")
    handle = session.table("t")
    latest = handle.inspect.timeline().to_pylist()[0]["instant_time"]
    session.sql(f"CALL rollback_to_instant(table => 't', instant_time => '{latest}')")
    session.sql("CREATE INDEX record_index ON t (id)")
    [compaction] = session.sql("RUN COMPACTION ON t").collect()
    assert compaction["state"] == "COMPLETED"

    chart = handle.inspect.timeline_chart()
    data = {i.instant_time: (i.action, i.state) for i in chart.instants if i.table == "data"}
    assert data[latest] == ("deltacommit", "rolled back")
    assert data[compaction["timestamp"]] == ("compaction", "completed")
    indexing = [ts for ts, (action, _) in data.items() if action == "indexing"]
    assert len(indexing) == 1 and data[indexing[0]][1] == "completed"
    assert [a for a, _ in data.values()].count("rollback") == 1
    assert any(i.table == "metadata" for i in chart.instants)
    assert chart._repr_png_().startswith(b"\x89PNG")

    path = str(tmp_path / "warehouse" / "t")
    for name in ("timeline.html", "timeline.png"):
        done = subprocess.run([sys.executable, "-m", "hudisql.cli", "timeline", path, "--out",
                               str(tmp_path / name)],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        assert f"{len(chart.instants)} instants" in done.stderr
    assert (tmp_path / "timeline.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    page = (tmp_path / "timeline.html").read_text(encoding="utf-8")
    for instant in chart.instants:
        assert f'id="{instant.table}:{instant.instant_time}"' in page
    assert f'id="data:{indexing[0]}"' in page and f'id="data:{compaction["timestamp"]}"' in page
