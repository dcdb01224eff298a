"""The catalog: databases and tables in a real database, write ids, the notification log,
and a synchronized metadata cache that is never stale for managed tables.

Imports SQLAlchemy and ``hudisql.table``; nothing of Spark.
"""
