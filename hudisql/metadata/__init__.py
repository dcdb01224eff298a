"""The metadata table (``.hoodie/metadata``): its layout, records, reads, writes and builders.

Owns Hudi's metadata table as hudisql keeps it: partitions, file groups and keys
(``partitions``, ``keys``), the ``HoodieMetadataRecord`` layout and codec (``schema``,
``records``, ``avro``, ``arrow_records``), the table itself and its reads (``table``,
``reader``), index configuration (``config``), records built from the data table
(``builders``, ``column_stats``, ``bloom``, ``commit_update``), the commit participant that
keeps it exact on every commit (``participant``, ``row_changes``), its validation
(``validate``) and overviews for SHOW INDEXES and the procedures (``overview``).
Imports ``hudisql.table`` and the commit protocol only; never Spark. See docs/METADATA.md.
"""

from __future__ import annotations
