"""The storage core: Hudi's on-disk format (properties, timeline, file view, log format, merge).

Owns everything about files in Hudi's layout (read v6/v8/v9, write v6). Imports nothing of
Spark, so Spark executors and other tools can use it; see ``docs/FORMAT.md``.
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
