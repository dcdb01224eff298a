"""The Spark write path: write jobs on executors, DML, ``df.write``, staging.

Commits every write through ``hudisql.txn`` (the commit protocol). May import
``hudisql.table``, ``hudisql.txn``, ``hudisql.metadata`` and ``hudisql.read``; and Spark.
"""
