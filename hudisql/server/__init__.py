"""``hudisql serve``: the PostgreSQL v3 wire protocol in front of hudisql, for BI and SQL tools.

Owns the wire codec, type OIDs, authentication (SCRAM-SHA-256, TLS), the emulated
``pg_catalog``/``information_schema``, SQL translation and the per-connection sessions; the
top layer, beside ``hudisql.session`` and ``hudisql.cli``: it may import everything below.
"""

from __future__ import annotations

from hudisql.server.server import PgServer, ServerConfig

__all__ = ["PgServer", "ServerConfig"]
