"""The ``hudi`` Python data source for Spark: planning, pruning and merged reads.

Uses ``hudisql.table`` on executors to read file slices as Arrow batches. May import
``hudisql.table``, ``hudisql.txn`` and ``hudisql.metadata``; and Spark.
"""
