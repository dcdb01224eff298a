"""The ``hudi`` Python data source for Spark: planning, pruning and merged reads, and Hudi's
query types (snapshot, read-optimized, incremental latest state and CDC).

Uses ``hudisql.table`` on executors to read file slices as Arrow batches. May import
``hudisql.table``, ``hudisql.txn`` and ``hudisql.metadata``; and Spark.
"""
