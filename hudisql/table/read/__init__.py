"""Reading a table without Spark: the merged read of a file slice (base file, log blocks,
expression blocks, the reconciliation of duplicate blocks from task retries), incremental and
change-data-capture queries, and files that vanish under a reader."""
