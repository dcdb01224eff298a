"""Strip outputs and execution counts from notebooks before committing them.

Usage: ``.venv/bin/python scripts/strip_notebooks.py [notebooks/*.ipynb]`` (default: every
notebook in notebooks/). tests/test_notebooks.py fails on a committed notebook with outputs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat


def strip(path: Path) -> bool:
    """Remove ``path``'s outputs and execution counts; returns True when it changed."""
    notebook = nbformat.read(path, as_version=4)
    changed = False
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        if cell.outputs or cell.execution_count is not None:
            cell.outputs, cell.execution_count, changed = [], None, True
        if cell.metadata.pop("execution", None) is not None:
            changed = True
    if changed:
        nbformat.write(notebook, path)
    return changed


def main(argv: list[str]) -> int:
    """Strip the notebooks named in ``argv`` (or all of notebooks/); returns 0."""
    root = Path(__file__).resolve().parent.parent / "notebooks"
    paths = [Path(a) for a in argv] or sorted(root.glob("*.ipynb"))
    for path in paths:
        if strip(path):
            print(f"stripped {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
