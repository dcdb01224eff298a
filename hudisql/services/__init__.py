"""Table services: the RFC-45 indexer and a table's indexes (create, drop, list, refresh).

Owns scheduling, running and committing table-service instants as Spark jobs. May import
``hudisql.table``, the commit protocol, ``hudisql.metadata`` and Spark; never ``sql`` or
``session`` (they call in).
"""
