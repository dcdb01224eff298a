"""Where a table's bytes live: one ``Storage`` per base path over ``pyarrow.fs`` (local paths,
``s3://``, ``gs://``, ``abfs://``), locations kept as URIs, S3's conditional PUT, and the
memory a process keeps. Imports nothing else of ``hudisql.table``."""
