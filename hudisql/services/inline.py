"""Inline table services: after a write, schedule and run what the options ask for.

``hoodie.log.compaction.inline=true`` runs a log compaction after each write (when a slice
qualifies); ``hoodie.compact.inline=true`` schedules a compaction once
``hoodie.compact.inline.max.delta.commits`` deltacommits completed since the last one, and
runs it. Both only on merge-on-read tables, with the writer's options and participants.
``hoodie.clustering.inline=true`` runs a clustering once ``hoodie.clustering.inline.max.commits``
writes completed since the last one (any table type).
"""

from __future__ import annotations

from collections.abc import Mapping

from hudisql.services.maintenance import Maintenance

__all__ = ["CLUSTERING_INLINE", "COMPACT_INLINE", "LOG_COMPACTION_INLINE",
           "run_inline_services"]

LOG_COMPACTION_INLINE = "hoodie.log.compaction.inline"
COMPACT_INLINE = "hoodie.compact.inline"
CLUSTERING_INLINE = "hoodie.clustering.inline"


def _on(options: Mapping[str, str], key: str) -> bool:
    return str(options.get(key, "false")).strip().lower() == "true"


def run_inline_services(maintenance: Maintenance) -> list[str]:
    """Run the inline services ``maintenance.options`` turn on; returns the instants they
    completed (none when neither is on, or the table is copy-on-write)."""
    options = maintenance.options
    done: list[str] = []
    if _on(options, CLUSTERING_INLINE):
        from hudisql.services.clustering import clustering_due

        if clustering_due(maintenance.open_table(), options):
            done += [r.instant for r in maintenance.run_clustering()]
    if not (_on(options, LOG_COMPACTION_INLINE) or _on(options, COMPACT_INLINE)):
        return done
    table = maintenance.open_table()
    if not table.properties.is_mor:
        return done
    if _on(options, COMPACT_INLINE):
        from hudisql.services.compaction import schedule_compaction

        if schedule_compaction(table, options, runner=maintenance.runner, only_when_due=True):
            result = maintenance.run_compaction()
            if result is not None:
                done.append(result.instant)
    if _on(options, LOG_COMPACTION_INLINE):
        result = maintenance.run_log_compaction()
        if result is not None:
            done.append(result.instant)
    return done
