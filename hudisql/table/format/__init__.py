"""Hudi's on-disk format as data: ``hoodie.properties``, schemas, file names, instants and the
timeline (active and archived files), commit metadata and service plans, the file-system view
of file groups and slices, the log format (``format/log``) and HFile, the metadata table's
base file format in Hudi (``format/hfile``). Imports only ``table.io``."""
