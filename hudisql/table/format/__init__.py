"""Hudi's on-disk format as data: ``hoodie.properties``, schemas, file names, instants and the
timeline (active and archived files), commit metadata and service plans, the file-system view
of file groups and slices, and the log format (``format/log``). Imports only ``table.io``."""
