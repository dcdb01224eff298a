"""The storage core: Hudi's on-disk format, and reading, writing and servicing tables in it.

Owns everything about files in Hudi's layout (read v6/v8/v9, write v6); see
``docs/FORMAT.md``. Imports only ``hudisql.errors``: nothing of Spark and no layer
above it (the commit protocol is ``hudisql.txn``), so Spark executors and other tools use it.

``io/`` (storage, locations) < ``format/`` (properties, timeline, file view, log format) <
``read/``, ``write/``, ``services/`` and the ``HudiTable`` facade (``table.py``), which use
each other; import-linter keeps ``io`` and ``format`` below the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hudisql.table.table import HudiTable

__all__ = ["HudiTable"]


def __getattr__(name: str) -> Any:
    # Lazy so that importing one core module does not import them all.
    if name == "HudiTable":
        from hudisql.table.table import HudiTable

        return HudiTable
    raise AttributeError(name)
