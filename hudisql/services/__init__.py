"""Table services: log compaction (RFC-48), compaction and clean, scheduled and run.

Owns the driver side of each service (plan under the table lock, execute one task per
file slice through a :class:`~hudisql.services.runner.SliceRunner`: Spark or in-process,
commit through the commit protocol with the caller's participants). Imports ``table``,
``write`` (locks, heartbeats) and, in ``runner``, Spark; nothing above.
"""
