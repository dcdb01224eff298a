"""Table services: log compaction (RFC-48), compaction and clean, scheduled and run; the RFC-45
indexer and a table's indexes (create, drop, list, refresh).

Owns the driver side of each service (plan under the table lock, execute one task per
file slice through a :class:`~hudisql.services.runner.SliceRunner`: Spark or in-process,
commit through the commit protocol with the caller's participants) and the indexer's
scheduling, building and committing of metadata partitions as Spark jobs. Imports ``table``,
the commit protocol, ``write`` (locks, heartbeats), ``hudisql.metadata`` and Spark; never
``sql`` or ``session`` (they call in).
"""
