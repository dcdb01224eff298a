"""The write path: Spark write jobs, the commit protocol, table locks, heartbeats, rollback.

Uses ``hudisql.table`` for the format and Spark for the heavy work.
"""
