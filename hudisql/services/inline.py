"""Inline table services: after a write, schedule and run what the options ask for.

``hoodie.log.compaction.inline=true`` runs a log compaction after each write (when a slice
qualifies); ``hoodie.compact.inline=true`` schedules a compaction once
``hoodie.compact.inline.max.delta.commits`` deltacommits completed since the last one, and
runs it. Both only on merge-on-read tables, with the writer's options and participants.
``hoodie.clustering.inline=true`` runs a clustering once ``hoodie.clustering.inline.max.commits``
writes completed since the last one (any table type).

Then, as Apache Hudi's writers do after every commit and by default, on every table:
clean (``hoodie.clean.automatic``, default true: ``hoodie.cleaner.policy``,
``hoodie.cleaner.commits.retained``...) and archival of the timeline after it
(``hoodie.archive.automatic``, default true: ``hoodie.keep.min.commits``,
``hoodie.keep.max.commits``). Each runs under the table lock in the writing statement, so
the statement's time includes them; set the option to false to turn one off. With
``hoodie.clean.async.enabled=true`` (Hudi's older name ``hoodie.clean.async`` too) the
clean, and the archival after it, run in the session's background worker instead
(:mod:`hudisql.services.background`): the statement returns once its commit and inline
compactions are done.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from hudisql.errors import TableServiceError
from hudisql.services.archive import archive_needed
from hudisql.services.background import BackgroundServices
from hudisql.services.clean import clean_needed
from hudisql.services.maintenance import Maintenance
from hudisql.table.services.archive import ArchivalSettings
from hudisql.table.services.clean import CleanSettings

__all__ = ["ARCHIVE_AUTOMATIC", "CLEAN_ASYNC", "CLEAN_AUTOMATIC", "CLUSTERING_INLINE",
           "COMPACT_INLINE", "LOG_COMPACTION_INLINE", "run_inline_services"]

_LOG = logging.getLogger(__name__)

LOG_COMPACTION_INLINE = "hoodie.log.compaction.inline"
COMPACT_INLINE = "hoodie.compact.inline"
CLEAN_AUTOMATIC = "hoodie.clean.automatic"
ARCHIVE_AUTOMATIC = "hoodie.archive.automatic"
CLUSTERING_INLINE = "hoodie.clustering.inline"
CLEAN_ASYNC = "hoodie.clean.async.enabled"
#: Hudi's older name of ``hoodie.clean.async.enabled``.
CLEAN_ASYNC_LEGACY = "hoodie.clean.async"


def _on(options: Mapping[str, str], key: str, default: bool = False) -> bool:
    value = str(options.get(key, "true" if default else "false")).strip().lower()
    if value not in ("true", "false"):
        raise TableServiceError(
            f"{key}={options.get(key)!r} is not a boolean: set it to true or false")
    return value == "true"


def run_inline_services(maintenance: Maintenance,
                        background: BackgroundServices | None = None) -> list[str]:
    """Run the inline services ``maintenance.options`` turn on; returns the instants they
    completed (compactions only on merge-on-read tables; a clean when it deleted files).

    With ``hoodie.clean.async.enabled=true`` the clean and the archival after it go to
    ``background`` (the session's worker) and are not among the instants returned.

    Raises:
        TableServiceError: a service's bad setting (the write itself has completed).
    """
    options = maintenance.options
    clean, archive = _on(options, CLEAN_AUTOMATIC, True), _on(options, ARCHIVE_AUTOMATIC, True)
    asynchronous = clean and _clean_async(options)
    done = _compactions(maintenance)
    if asynchronous and background is not None:
        CleanSettings.parse(options, maintenance.path)  # bad settings: refused now
        if archive:
            ArchivalSettings.parse(options, maintenance.path)
        own = dataclasses.replace(maintenance, options=dict(options))
        background.submit(maintenance.path, f"automatic clean of the table at "
                          f"{maintenance.path}", lambda: _clean_then_archive(own, archive))
        return done
    if asynchronous:
        _LOG.warning("%s=true, but this write has no session to run the clean in the "
                     "background: the table at %s is cleaned inline", CLEAN_ASYNC,
                     maintenance.path)
    cleaned = _clean_then_archive(maintenance, archive) if clean else None
    if cleaned is not None:
        done.append(cleaned)
    if not clean and archive and archive_needed(maintenance.open_table(), options):
        maintenance.run_archive()
    return done


def _clean_async(options: Mapping[str, str]) -> bool:
    key = CLEAN_ASYNC if CLEAN_ASYNC in options else CLEAN_ASYNC_LEGACY
    return _on(options, key)


def _clean_then_archive(maintenance: Maintenance, archive: bool) -> str | None:
    """Clean when something is to clean, then archive when due (Hudi's order); returns
    the clean's instant time, or None."""
    options = maintenance.options
    done = None
    table = maintenance.open_table()
    if clean_needed(table, options):
        cleaned = maintenance.run_clean()
        if cleaned is not None:
            done = cleaned.start_clean_time
        table = maintenance.open_table()  # the clean changed the timeline
    if archive and archive_needed(table, options):
        maintenance.run_archive()
    return done


def _compactions(maintenance: Maintenance) -> list[str]:
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
