"""The metadata table (``.hoodie/metadata``): its layout, records, reads, writes and builders.

Owns Hudi's metadata table as hudisql keeps it: partitions, file groups and keys
(``partitions``, ``keys``), the ``HoodieMetadataRecord`` layout (``schema``, ``records``),
the table itself (``table``), index configuration (``config``), records built from the data
table (``builders``, ``column_stats``, ``commit_update``), the commit participant that keeps
it exact on every commit (``participant``) and its validation (``validate``). Imports
``hudisql.table`` and the commit protocol only; never Spark.
"""

from __future__ import annotations
