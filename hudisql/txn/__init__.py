"""The commit protocol: transactions, locks, heartbeats, conflict and schema checks, rollback.

Owns how an instant goes requested -> inflight -> completed (or rolled back) and the commit
participants called under the lock. May import ``hudisql.table`` and ``hudisql.errors`` only:
no Spark, no metadata table, no catalog (lock providers above it are found by dotted name).
"""
