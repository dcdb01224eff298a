"""The notebooks of notebooks/ run top to bottom in a fresh kernel and print the right figures.

Each notebook runs in its own IPython kernel (this interpreter: the project's venv), with
its own Spark, in a temporary working directory; any cell error fails the test, and so does
a ``%%hudisql`` cell that renders an error, or a cell whose output has an ``ERROR`` or
``Exception`` line, unless the cell is tagged ``expect-error``. Then the figures the
notebook prints are checked. Committed notebooks carry no outputs.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
#: Seconds one cell may take (a kernel's first cell starts Spark).
CELL_TIMEOUT = 240


def outputs(cell: nbformat.NotebookNode) -> str:
    """Everything a cell showed, as text: streams, plain text and HTML, joined by lines."""
    parts: list[str] = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("execute_result", "display_data", "update_display_data"):
            data = output.get("data", {})
            parts += [str(data.get(kind, "")) for kind in ("text/plain", "text/html")]
            if "image/png" in data:
                parts.append("<image/png>")
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}")
    return "\n".join(parts)


def run(name: str, workdir: Path) -> list[nbformat.NotebookNode]:
    """Execute notebook ``name`` in a fresh kernel; returns its code cells with outputs."""
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    client = NotebookClient(notebook, timeout=CELL_TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(workdir)}})
    client.execute()
    cells = [c for c in notebook.cells if c.cell_type == "code"]
    for cell in cells:
        if "expect-error" not in cell.metadata.get("tags", []):
            assert 'class="hudisql-error"' not in outputs(cell), (
                f"{name}: a cell failed:\n{cell.source}\n{outputs(cell)}")
            # Quiet success (issue 26): no ERROR log line and no stack trace either.
            noisy = [line[:300] for line in outputs(cell).splitlines()
                     if "ERROR" in line or "Exception" in line]
            assert noisy == [], f"{name}: a cell that succeeded logged:\n{cell.source}\n{noisy}"
    return cells


def text_of(cells: list[nbformat.NotebookNode]) -> str:
    return "\n".join(outputs(c) for c in cells)


def check_quickstart(cells: list[nbformat.NotebookNode]) -> None:
    text = text_of(cells)
    assert "6 rows · 3 statements" in text  # the first SQL cell: created, inserted, selected
    assert "rows now: 5\n" in text and "fare of t1 now: 38.2\n" in text
    mistake = next(outputs(c) for c in cells if "expect-error" in c.metadata.get("tags", []))
    assert 'class="hudisql-error"' in mistake and "UNRESOLVED_COLUMN" in mistake
    assert 'SELECT uuid, <mark class="hudisql-error-at">ridr</mark>' in mistake
    assert re.search(r"upsert \d{17}: [1-9]\d* file slices written", text)
    assert "rows now: 2005\n" in text
    progress = next(outputs(c) for c in cells if "trips.upsert(more)" in c.source)
    assert 'class="hudisql-progress"' in progress and "upsert trips · step 3/3" in progress
    assert "done" in progress
    assert "instants drawn: 4\n" in text and "<image/png>" in text
    assert "timeline.html names 4 of 4 instants\n" in text  # written by `hudisql timeline`
    assert "4 rows" in next(outputs(c) for c in cells if "SHOW TIMELINE" in c.source)
    # CREATE INDEX: a record index and a secondary index, built, and the metadata table exact.
    indexes = next(outputs(c) for c in cells if "CREATE INDEX" in c.source)
    assert "2 rows · 3 statements" in indexes
    assert "indexes: [('idx_rider', 'built'), ('record_index', 'built')]\n" in text
    assert ("data partitions in the files index: "
            "['city=chennai', 'city=san_francisco', 'city=sao_paulo']\n") in text
    # Data skipping: the lookup of one ride reads one file slice through the record index;
    # with skipping off, every slice of the table.
    on = re.search(r"skipping on: kept 1 of (\d+) file slices \(record_index", text)
    off = re.search(r"skipping off: kept (\d+) of (\d+) file slices", text)
    assert on is not None and off is not None
    assert 1 < int(off.group(1)) == int(off.group(2)) == int(on.group(1))
    assert "same rows: True (1 row)\n" in text
    # RUN LOG COMPACTION: one completed, fewer log blocks, the same rows.
    run = next(outputs(c) for c in cells if "RUN LOG COMPACTION" in c.source)
    shown = next(outputs(c) for c in cells if "SHOW LOG COMPACTION" in c.source)
    assert "COMPLETED" in run and "1 row" in run and "COMPLETED" in shown
    blocks = re.search(r"valid log blocks: (\d+) before, (\d+) after log compaction\n", text)
    assert blocks is not None and int(blocks.group(2)) < int(blocks.group(1))
    assert "same rows after log compaction: True\n" in text
    # RUN COMPACTION: no log blocks left, the same rows; then a rolled-back write.
    assert "COMPLETED" in next(outputs(c) for c in cells if "RUN COMPACTION" in c.source)
    assert "valid log blocks after compaction: 0\n" in text
    assert "same rows after compaction: True\n" in text
    assert "same rows after the rollback: True\n" in text
    assert text.count("metadata table differences: 0\n") == 2
    # The timeline picture of all of it, inline and from the shell (PNG and HTML).
    assert ("actions drawn: ['compaction', 'deltacommit', 'indexing', 'logcompaction', "
            "'rollback']\n") in text and "rolled back: 1\n" in text
    assert "timeline.png is a PNG: True\n" in text
    drawn = re.findall(r"timeline\.html names (\d+) of (\d+) instants\n", text)
    assert len(drawn) == 2 and drawn[1][0] == drawn[1][1] and int(drawn[1][1]) > 4
    assert ("actions in timeline.html: ['compaction', 'deltacommit', 'indexing', "
            "'logcompaction', 'rollback']\n") in text
    # TIMESTAMP AS OF and hudi_table_changes.
    assert "rows as of the first commit: 6\n" in text
    assert "fare of t1 as of the first commit: 19.1\n" in text
    assert "trips changed since the first commit: 2\n" in text


def check_concurrency(cells: list[nbformat.NotebookNode]) -> None:
    text = text_of(cells)
    outcomes = re.findall(r"^B (committed|refused: \w+)", text, re.MULTILINE)
    assert outcomes == ["refused: CommitConflictError", "committed",
                        "refused: ConcurrentSchemaEvolutionError", "committed"]
    assert "status of order 2: shipped\n" in text
    assert "statuses: [(1, 'shipped'), (2, 'shipped'), (3, 'shipped'), (4, 'new')]" in text
    assert "RFC-82 case 8" in text and "columns added: discount" in text
    assert "columns: ['id', 'status', 'amount', 'ts', 'region', 'note']\n" in text
    assert "order 2: shipped, note=None, priority=1\n" in text
    assert "order 4: shipped, note=fragile, priority=None\n" in text
    rolled = re.search(r"rolled back: \[(.*)\]", text)
    assert rolled is not None and len(rolled.group(1).split(",")) == 2
    assert "<image/png>" in text
    # An index build with a write committed between its schedule and its execution.
    assert "while building: [('record_index', 'building')]\n" in text
    assert "after the build: [('record_index', 'built')]\n" in text
    assert "metadata table differences: 0\n" in text
    assert "status of order 3: delivered\n" in text
    assert "indexing instants: [('data', 'completed')]\n" in text
    validated = next(outputs(c) for c in cells
                     if c.source.startswith("%%hudisql\nCALL validate_metadata_table"))
    assert "0 rows" in validated


def check_catalog(cells: list[nbformat.NotebookNode]) -> None:
    text = text_of(cells)
    assert "the same catalog file: True\n" in text
    assert "two sees total balance 150.0\n" in text
    assert "after five reads: hits=4 misses=1 refreshes=0 hit rate=0.80\n" in text
    # one's writes: two's next statement misses (a refresh), and sees the new balances.
    assert "two sees total balance 150.0, ada has 70.0\n" in text
    assert "after one's writes: hits=5 misses=2 refreshes=1 hit rate=0.71\n" in text
    # with the change log applied, the new version is a hit.
    assert re.search(r"two applied [1-9]\d* events; bob has 85.0\n", text)
    assert "after syncing: hits=6 misses=2 refreshes=1 hit rate=0.75\n" in text
    assert "two sees columns: ['id', 'owner', 'balance', 'ts', 'currency']\n" in text
    assert "after the schema change: hits=6 misses=3 refreshes=2" in text
    assert "<th>currency</th>" in text and "2 rows" in text


CHECKS: dict[str, Callable[[list[nbformat.NotebookNode]], None]] = {
    "quickstart": check_quickstart,
    "concurrency": check_concurrency,
    "catalog": check_catalog,
}


def test_every_notebook_is_checked() -> None:
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(CHECKS)


def test_committed_notebooks_carry_no_outputs() -> None:
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, (
                    f"{path.name}: strip the outputs before committing (cell {cell.id})")


@pytest.mark.notebook
@pytest.mark.parametrize("name", sorted(CHECKS))
def test_notebook_runs_top_to_bottom(name: str, tmp_path: Path) -> None:
    CHECKS[name](run(name, tmp_path))


def test_the_strip_script_removes_outputs(tmp_path: Path) -> None:
    sys.path.insert(0, str(NOTEBOOKS.parent / "scripts"))
    try:
        from strip_notebooks import strip
    finally:
        sys.path.pop(0)
    path = tmp_path / "run.ipynb"
    notebook = nbformat.read(NOTEBOOKS / "quickstart.ipynb", as_version=4)
    code = next(c for c in notebook.cells if c.cell_type == "code")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="rows now: 5\n")]
    code.execution_count = 3
    nbformat.write(notebook, path)
    assert strip(path) and not strip(path)
    stripped = nbformat.read(path, as_version=4)
    assert all(c.outputs == [] and c.execution_count is None
               for c in stripped.cells if c.cell_type == "code")
