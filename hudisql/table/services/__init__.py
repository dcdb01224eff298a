"""The table services' work in the core, without Spark: what to clean, compact, log-compact,
cluster (and in which layout) and archive, and doing it for one slice or group; the Spark jobs
that run them live in ``hudisql.services``."""
