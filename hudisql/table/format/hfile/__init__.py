"""HFile (version 3), the base file format of Hudi's metadata table: sorted key-value pairs.

``blocks`` holds the block framing and codecs, ``trailer`` the trailer and the file info
map, ``reader`` and ``writer`` whole files. Pure Python (zlib, struct); the layout written
is the one Apache Hudi's native writer (hudi-io) writes and hudi-rs reads (docs/FORMAT.md).
"""

from __future__ import annotations

from hudisql.table.format.hfile.blocks import Codec
from hudisql.table.format.hfile.reader import HFileReader
from hudisql.table.format.hfile.writer import HFileWriter, write_hfile

__all__ = ["Codec", "HFileReader", "HFileWriter", "write_hfile"]
