"""The metadata table (``.hoodie/metadata``): layout, keys, records, reads, writes, builders.

Owns the index partitions, the commit participant that keeps them exact, and validation.
May import ``hudisql.table``, ``hudisql.txn`` and ``hudisql.errors`` only; never Spark.
"""

from __future__ import annotations
