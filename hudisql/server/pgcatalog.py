"""The emulated ``pg_catalog`` and ``information_schema``: Spark temp views per connection.

Tools learn what exists by querying PostgreSQL's catalog tables. Each connection's Spark
session holds them as temporary views (``pg_class``, ``information_schema_tables``, ...),
built on demand from hudisql's catalog (hudi tables, with their record keys as primary
keys) and Spark's (other tables and views), just before a statement that names them runs,
so they are never staler than the statement. Databases appear as schemas; the one
database is ``hudisql``. OIDs of tables and schemas are stable hashes of their names, so
they agree between connections and between statements.
"""

from __future__ import annotations

import datetime as dt
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hudisql.server.types import BY_OID, PG_TYPES, PgType, pg_type_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql import types as T

    from hudisql.session import HudiSession

DATABASE = "hudisql"
PG_CATALOG_OID = 11
INFORMATION_SCHEMA_OID = 13000
OWNER_OID = 10
#: The class OIDs tools join through ``'pg_class'::regclass`` and friends.
CLASS_OIDS = {"pg_class": 1259, "pg_namespace": 2615, "pg_type": 1247, "pg_attribute": 1249,
              "pg_proc": 1255, "pg_constraint": 2606, "pg_database": 1262,
              "pg_description": 2609, "pg_index": 2610, "pg_roles": 1260,
              "pg_settings": 12000, "pg_range": 3541, "pg_enum": 3501,
              "pg_extension": 3079, "pg_am": 2601, "pg_attrdef": 2604, "pg_inherits": 2611}


#: Temp views holding a row statement's rows for the query around it
#: (:mod:`hudisql.server.rowstatements`): the server's, never listed.
HELD_ROWS_PREFIX = "__hudisql_rows_"


def stable_oid(*parts: str) -> int:
    """A stable OID (above the built-in range) for a schema or table name."""
    return 16384 + zlib.crc32("\x00".join(parts).encode("utf-8")) % 2_000_000_000


@dataclass
class Relation:
    """A table or view as the catalog shows it."""

    schema: str
    name: str
    columns: list[tuple[str, T.DataType, bool]]
    kind: str = "r"  # r: table, v: view
    keys: list[str] = field(default_factory=list)
    comment: str | None = None

    @property
    def oid(self) -> int:
        """The relation's OID."""
        return stable_oid(self.schema, self.name)


#: Each emulated table: its Spark DDL schema. Empty tables are joined by tools; they must
#: exist with the right columns even when they hold nothing.
SCHEMAS: dict[str, str] = {
    "pg_namespace": "oid INT, nspname STRING, nspowner INT, nspacl STRING",
    "pg_class": (
        "oid INT, relname STRING, relnamespace INT, reltype INT, reloftype INT, relowner INT,"
        " relam INT, relfilenode INT, reltablespace INT, relpages INT, reltuples FLOAT,"
        " relallvisible INT, reltoastrelid INT, relhasindex BOOLEAN, relisshared BOOLEAN,"
        " relpersistence STRING, relkind STRING, relnatts SMALLINT, relchecks SMALLINT,"
        " relhasrules BOOLEAN, relhastriggers BOOLEAN, relhassubclass BOOLEAN,"
        " relrowsecurity BOOLEAN, relforcerowsecurity BOOLEAN, relispopulated BOOLEAN,"
        " relreplident STRING, relispartition BOOLEAN, relrewrite INT, relfrozenxid INT,"
        " relminmxid INT, relacl STRING, reloptions ARRAY<STRING>, relpartbound STRING,"
        " relhasoids BOOLEAN"),
    "pg_attribute": (
        "attrelid INT, attname STRING, atttypid INT, attstattarget INT, attlen SMALLINT,"
        " attnum SMALLINT, attndims INT, attcacheoff INT, atttypmod INT, attbyval BOOLEAN,"
        " attalign STRING, attstorage STRING, attcompression STRING, attnotnull BOOLEAN,"
        " atthasdef BOOLEAN, atthasmissing BOOLEAN, attidentity STRING, attgenerated STRING,"
        " attisdropped BOOLEAN, attislocal BOOLEAN, attinhcount INT, attcollation INT,"
        " attacl STRING, attoptions STRING, attfdwoptions STRING"),
    "pg_type": (
        "oid INT, typname STRING, typnamespace INT, typowner INT, typlen SMALLINT,"
        " typbyval BOOLEAN, typtype STRING, typcategory STRING, typispreferred BOOLEAN,"
        " typisdefined BOOLEAN, typdelim STRING, typrelid INT, typelem INT, typarray INT,"
        " typinput INT, typoutput INT, typreceive INT, typsend INT,"
        " typmodin INT, typmodout INT, typanalyze INT, typalign STRING,"
        " typstorage STRING, typnotnull BOOLEAN, typbasetype INT, typtypmod INT,"
        " typndims INT, typcollation INT, typdefaultbin STRING, typdefault STRING,"
        " typacl STRING, typsubscript STRING"),
    "pg_description": "objoid INT, classoid INT, objsubid INT, description STRING",
    "pg_database": (
        "oid INT, datname STRING, datdba INT, encoding INT, datcollate STRING,"
        " datctype STRING, datistemplate BOOLEAN, datallowconn BOOLEAN, datconnlimit INT,"
        " datlastsysoid INT, datfrozenxid INT, datminmxid INT, dattablespace INT,"
        " datacl STRING, datlocprovider STRING, daticulocale STRING, daticurules STRING,"
        " datcollversion STRING"),
    "pg_settings": (
        "name STRING, setting STRING, unit STRING, category STRING, short_desc STRING,"
        " extra_desc STRING, context STRING, vartype STRING, source STRING, min_val STRING,"
        " max_val STRING, enumvals ARRAY<STRING>, boot_val STRING, reset_val STRING,"
        " sourcefile STRING, sourceline INT, pending_restart BOOLEAN"),
    "pg_roles": (
        "oid INT, rolname STRING, rolsuper BOOLEAN, rolinherit BOOLEAN,"
        " rolcreaterole BOOLEAN, rolcreatedb BOOLEAN, rolcanlogin BOOLEAN,"
        " rolreplication BOOLEAN, rolconnlimit INT, rolpassword STRING,"
        " rolvaliduntil TIMESTAMP, rolbypassrls BOOLEAN, rolconfig ARRAY<STRING>"),
    "pg_constraint": (
        "oid INT, conname STRING, connamespace INT, contype STRING, condeferrable BOOLEAN,"
        " condeferred BOOLEAN, convalidated BOOLEAN, conrelid INT, contypid INT,"
        " conindid INT, conparentid INT, confrelid INT, confupdtype STRING,"
        " confdeltype STRING, confmatchtype STRING, conislocal BOOLEAN, coninhcount INT,"
        " connoinherit BOOLEAN, conkey ARRAY<SMALLINT>, confkey ARRAY<SMALLINT>,"
        " conbin STRING"),
    "pg_index": (
        "indexrelid INT, indrelid INT, indnatts SMALLINT, indnkeyatts SMALLINT,"
        " indisunique BOOLEAN, indisprimary BOOLEAN, indisexclusion BOOLEAN,"
        " indimmediate BOOLEAN, indisclustered BOOLEAN, indisvalid BOOLEAN,"
        " indcheckxmin BOOLEAN, indisready BOOLEAN, indislive BOOLEAN,"
        " indisreplident BOOLEAN, indkey ARRAY<SMALLINT>, indcollation ARRAY<INT>,"
        " indclass ARRAY<INT>, indoption ARRAY<SMALLINT>, indexprs STRING, indpred STRING"),
    "pg_proc": (
        "oid INT, proname STRING, pronamespace INT, proowner INT, prolang INT,"
        " procost FLOAT, prorows FLOAT, provariadic INT, prosupport STRING, prokind STRING,"
        " prosecdef BOOLEAN, proleakproof BOOLEAN, proisstrict BOOLEAN, proretset BOOLEAN,"
        " provolatile STRING, proparallel STRING, pronargs SMALLINT,"
        " pronargdefaults SMALLINT, prorettype INT, proargtypes ARRAY<INT>,"
        " proallargtypes ARRAY<INT>, proargmodes ARRAY<STRING>, proargnames ARRAY<STRING>,"
        " prosrc STRING, probin STRING, proacl STRING"),
    "pg_range": (
        "rngtypid INT, rngsubtype INT, rngmultitypid INT, rngcollation INT, rngsubopc INT,"
        " rngcanonical STRING, rngsubdiff STRING"),
    "pg_enum": "oid INT, enumtypid INT, enumsortorder FLOAT, enumlabel STRING",
    "pg_extension": (
        "oid INT, extname STRING, extowner INT, extnamespace INT, extrelocatable BOOLEAN,"
        " extversion STRING, extconfig ARRAY<INT>, extcondition ARRAY<STRING>"),
    "pg_am": "oid INT, amname STRING, amhandler STRING, amtype STRING",
    "pg_attrdef": "oid INT, adrelid INT, adnum SMALLINT, adbin STRING",
    "pg_inherits": "inhrelid INT, inhparent INT, inhseqno INT, inhdetachpending BOOLEAN",
    "pg_collation": (
        "oid INT, collname STRING, collnamespace INT, collowner INT, collprovider STRING,"
        " collisdeterministic BOOLEAN, collencoding INT, collcollate STRING,"
        " collctype STRING"),
    "pg_policy": (
        "oid INT, polname STRING, polrelid INT, polcmd STRING, polpermissive BOOLEAN,"
        " polroles ARRAY<INT>, polqual STRING, polwithcheck STRING"),
    "pg_statistic_ext": (
        "oid INT, stxrelid INT, stxname STRING, stxnamespace INT, stxowner INT,"
        " stxstattarget INT, stxkeys ARRAY<SMALLINT>, stxkind ARRAY<STRING>"),
    "pg_publication": (
        "oid INT, pubname STRING, pubowner INT, puballtables BOOLEAN, pubinsert BOOLEAN,"
        " pubupdate BOOLEAN, pubdelete BOOLEAN, pubtruncate BOOLEAN, pubviaroot BOOLEAN"),
    "pg_publication_rel": (
        "oid INT, prpubid INT, prrelid INT, prqual STRING, prattrs ARRAY<SMALLINT>"),
    "pg_publication_namespace": "oid INT, pnpubid INT, pnnspid INT",
    "pg_trigger": (
        "oid INT, tgrelid INT, tgparentid INT, tgname STRING, tgfoid INT, tgtype SMALLINT,"
        " tgenabled STRING, tgisinternal BOOLEAN, tgconstraint INT"),
    "pg_rewrite": (
        "oid INT, rulename STRING, ev_class INT, ev_type STRING, ev_enabled STRING,"
        " is_instead BOOLEAN"),
    "pg_foreign_table": "ftrelid INT, ftserver INT, ftoptions ARRAY<STRING>",
    "pg_tablespace": "oid INT, spcname STRING, spcowner INT, spcacl STRING",
    "pg_depend": (
        "classid INT, objid INT, objsubid INT, refclassid INT, refobjid INT,"
        " refobjsubid INT, deptype STRING"),
    "pg_sequence": (
        "seqrelid INT, seqtypid INT, seqstart BIGINT, seqincrement BIGINT, seqmax BIGINT,"
        " seqmin BIGINT, seqcache BIGINT, seqcycle BOOLEAN"),
    "pg_user": (
        "usename STRING, usesysid INT, usecreatedb BOOLEAN, usesuper BOOLEAN,"
        " userepl BOOLEAN, usebypassrls BOOLEAN, passwd STRING, valuntil TIMESTAMP,"
        " useconfig ARRAY<STRING>"),
    "pg_stat_activity": (
        "datid INT, datname STRING, pid INT, leader_pid INT, usesysid INT, usename STRING,"
        " application_name STRING, client_addr STRING, client_hostname STRING,"
        " client_port INT, backend_start TIMESTAMP, xact_start TIMESTAMP,"
        " query_start TIMESTAMP, state_change TIMESTAMP, wait_event_type STRING,"
        " wait_event STRING, state STRING, backend_xid INT, backend_xmin INT,"
        " query_id BIGINT, query STRING, backend_type STRING"),
    "pg_tables": (
        "schemaname STRING, tablename STRING, tableowner STRING, tablespace STRING,"
        " hasindexes BOOLEAN, hasrules BOOLEAN, hastriggers BOOLEAN, rowsecurity BOOLEAN"),
    "pg_views": "schemaname STRING, viewname STRING, viewowner STRING, definition STRING",
    "pg_matviews": (
        "schemaname STRING, matviewname STRING, matviewowner STRING, tablespace STRING,"
        " hasindexes BOOLEAN, ispopulated BOOLEAN, definition STRING"),
    "pg_stat_user_tables": (
        "relid INT, schemaname STRING, relname STRING, seq_scan BIGINT, idx_scan BIGINT,"
        " n_tup_ins BIGINT, n_tup_upd BIGINT, n_tup_del BIGINT, n_live_tup BIGINT,"
        " n_dead_tup BIGINT, last_vacuum TIMESTAMP, last_analyze TIMESTAMP"),
    "information_schema_schemata": (
        "catalog_name STRING, schema_name STRING, schema_owner STRING,"
        " default_character_set_catalog STRING, default_character_set_schema STRING,"
        " default_character_set_name STRING, sql_path STRING"),
    "information_schema_tables": (
        "table_catalog STRING, table_schema STRING, table_name STRING, table_type STRING,"
        " self_referencing_column_name STRING, reference_generation STRING,"
        " user_defined_type_catalog STRING, user_defined_type_schema STRING,"
        " user_defined_type_name STRING, is_insertable_into STRING, is_typed STRING,"
        " commit_action STRING"),
    "information_schema_columns": (
        "table_catalog STRING, table_schema STRING, table_name STRING, column_name STRING,"
        " ordinal_position INT, column_default STRING, is_nullable STRING,"
        " data_type STRING, character_maximum_length INT, character_octet_length INT,"
        " numeric_precision INT, numeric_precision_radix INT, numeric_scale INT,"
        " datetime_precision INT, interval_type STRING, interval_precision INT,"
        " udt_catalog STRING, udt_schema STRING, udt_name STRING, dtd_identifier STRING,"
        " is_updatable STRING"),
}

#: The emulated tables' array columns (``polroles``, ``conkey``, ...), by name.
ARRAY_COLUMNS = frozenset(
    column.split()[0] for ddl in SCHEMAS.values() for column in ddl.split(", ")
    if "ARRAY<" in column)
#: Names a statement may use for the emulated tables, mapped to their view names.
CATALOG_TABLES = {name: name for name in SCHEMAS if name.startswith("pg_")}
INFORMATION_SCHEMA = {name.removeprefix("information_schema_"): name
                      for name in SCHEMAS if name.startswith("information_schema_")}
#: Which relations each view is built from (the others need only built-in rows).
_NEEDS_RELATIONS = {"pg_namespace", "pg_class", "pg_attribute", "pg_description",
                    "pg_constraint", "pg_tables", "pg_views", "pg_stat_user_tables",
                    "information_schema_schemata", "information_schema_tables",
                    "information_schema_columns"}


@dataclass
class Activity:
    """One logged-in connection as ``pg_stat_activity`` shows it."""

    pid: int
    user: str
    application_name: str
    query: str | None  # the statement running (None: idle)
    query_start: float | None  # when it started (``time.time()``)


@dataclass
class CatalogContext:
    """What the catalog rows depend on besides the tables: the user, the settings and the
    server's connections."""

    user: str
    settings: dict[str, str]
    activity: list[Activity] = field(default_factory=list)


def relations(session: HudiSession) -> tuple[list[str], list[Relation]]:
    """The schemas (databases) and relations to show: hudi tables from hudisql's catalog,
    then the other tables and views of Spark's, skipping the emulated views."""
    from hudisql.catalog import TableName
    from hudisql.parser.commands import TableName as SqlTableName

    spark = session.spark
    catalog = session.catalog
    databases = sorted({*catalog.list_databases(),
                        *(d.name for d in spark.catalog.listDatabases())})
    hudi: list[TableName] = []
    for database in catalog.list_databases():
        hudi.extend(catalog.list_tables(database))
    found: list[Relation] = []
    if hudi and session.router is not None:
        router: Any = session.router
        _, entries = router.resolve_names(
            spark, [SqlTableName((n.database, n.table)) for n in hudi])
        for name, entry in entries.items():
            keys = entry.properties.get("hoodie.table.recordkey.fields", "")
            columns = _columns(spark, f"`{name.database}`.`{name.table}`")
            found.append(Relation(name.database, name.table, columns,
                                  keys=[k for k in keys.split(",") if k],
                                  comment=entry.properties.get("comment")))
    seen = {(r.schema, r.name) for r in found}
    for database in databases:
        for table in spark.catalog.listTables(database):
            schema = table.namespace[0] if table.namespace else database
            if table.isTemporary:
                if table.name in SCHEMAS or table.name.startswith(HELD_ROWS_PREFIX):
                    continue
                schema = database
            if (schema, table.name) in seen or schema != database:
                continue
            seen.add((schema, table.name))
            qualified = table.name if table.isTemporary else f"`{schema}`.`{table.name}`"
            found.append(Relation(schema, table.name, _columns(spark, qualified),
                                  kind="v" if table.tableType in ("VIEW", "TEMPORARY")
                                  else "r", comment=table.description))
    return databases, found


def _columns(spark: SparkSession, name: str) -> list[tuple[str, T.DataType, bool]]:
    try:
        fields = spark.table(name).schema.fields
    except Exception:  # a table Spark cannot read (bad location) still lists, column-less
        return []
    return [(f.name, f.dataType, f.nullable) for f in fields]


def build_views(session: HudiSession, wanted: Iterable[str], context: CatalogContext) -> None:
    """(Re)define the temp views in ``wanted`` in the session's Spark session."""
    wanted = [w for w in dict.fromkeys(wanted) if w in SCHEMAS]
    if not wanted:
        return
    databases: list[str] = []
    rels: list[Relation] = []
    if _NEEDS_RELATIONS.intersection(wanted):
        databases, rels = relations(session)
    for view in wanted:
        rows = _ROWS[view](databases, rels, context)
        frame = session.spark.createDataFrame(rows, SCHEMAS[view])
        frame.createOrReplaceTempView(view)


Rows = list[tuple[Any, ...]]


def _namespaces(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    rows: Rows = [(PG_CATALOG_OID, "pg_catalog", OWNER_OID, None),
                  (INFORMATION_SCHEMA_OID, "information_schema", OWNER_OID, None)]
    return rows + [(stable_oid(d), d, OWNER_OID, None) for d in databases]


def _classes(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    rows: Rows = []
    for rel in rels:
        rows.append((rel.oid, rel.name, stable_oid(rel.schema), 0, 0, OWNER_OID, 2, 0, 0, 0,
                     -1.0, 0, 0, bool(rel.keys), False, "p", rel.kind, len(rel.columns), 0,
                     False, False, False, False, False, True, "d", False, 0, 0, 0, None,
                     None, None, False))
    for name, oid in CLASS_OIDS.items():
        rows.append((oid, name, PG_CATALOG_OID, 0, 0, OWNER_OID, 2, 0, 0, 0, -1.0, 0, 0,
                     False, False, "p", "r", len(SCHEMAS.get(name, "").split(",")), 0,
                     False, False, False, False, False, True, "n", False, 0, 0, 0, None,
                     None, None, False))
    return rows


def _attributes(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    rows: Rows = []
    for rel in rels:
        for number, (name, dtype, nullable) in enumerate(rel.columns, start=1):
            pg, typmod = pg_type_of(dtype)
            rows.append((rel.oid, name, pg.oid, -1, pg.size, number, 0, -1, typmod,
                         pg.size in (1, 2, 4, 8), "i", "p", "", not nullable, False, False,
                         "", "", False, True, 0, 0, None, None, None))
    return rows


def _type_functions(t: PgType | None) -> tuple[str, str, str, str]:
    """The input, output, receive and send functions of a type (None: its array type)."""
    if t is None:
        return "array_in", "array_out", "array_recv", "array_send"
    return (t.input, t.input.replace("in", "out", 1), t.receive,
            t.receive.replace("recv", "send"))


#: ``pg_proc``'s rows: the types' I/O functions, by name. Drivers tell arrays from base types
#: by joining ``pg_type.typreceive`` to ``pg_proc.oid`` (Npgsql) or comparing ``typinput``
#: with ``'array_in'::regproc`` (pgjdbc), so ``pg_type`` holds these OIDs as PostgreSQL does.
PROC_OIDS: dict[str, int] = {
    name: stable_oid("pg_proc", name)
    for t in (*PG_TYPES, None) for name in _type_functions(t)}


def proc_oid(name: str) -> int:
    """The OID ``'name'::regproc`` stands for (0, PostgreSQL's "no function", when the name
    is none of :data:`PROC_OIDS`)."""
    return PROC_OIDS.get(name.strip('"').removeprefix("pg_catalog."), 0)


def _types(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    rows: Rows = []
    for t in PG_TYPES:
        io = [PROC_OIDS[f] for f in _type_functions(t)]
        rows.append((t.oid, t.name, PG_CATALOG_OID, OWNER_OID, t.size, t.size in (1, 2, 4, 8),
                     "p" if t.category == "P" else "b", t.category, False, True, ",", 0, 0,
                     t.array_oid, *io, 0, 0, 0, "i", "p", False, 0, -1,
                     0, 0, None, None, None, "-"))
        array_io = [PROC_OIDS[f] for f in _type_functions(None)]
        rows.append((t.array_oid, "_" + t.name, PG_CATALOG_OID, OWNER_OID, -1, False, "b", "A",
                     False, True, ",", 0, t.oid, 0, *array_io, 0, 0, 0, "i", "x", False, 0,
                     -1, 0, 0, None, None, None, "array_subscript_handler"))
    return rows


def _procs(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    return [(oid, name, PG_CATALOG_OID, OWNER_OID, 12, 1.0, 0.0, 0, "-", "f", False, False,
             True, False, "i", "s", 1, 0, 2275 if name.endswith(("out", "send")) else 2249,
             [], None, None, None, name, None, None) for name, oid in PROC_OIDS.items()]


def _descriptions(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    return [(r.oid, CLASS_OIDS["pg_class"], 0, r.comment) for r in rels if r.comment]


def _databases(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    return [(stable_oid(DATABASE), DATABASE, OWNER_OID, 6, "C.UTF-8", "C.UTF-8", False, True,
             -1, 0, 0, 0, 0, None, "c", None, None, None)]


def _settings(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    return [(k, v, None, "hudisql", k, None, "user", "string", "session", None, None, None, v,
             v, None, None, False) for k, v in sorted(ctx.settings.items())]


def _roles(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    return [(OWNER_OID, ctx.user, False, True, False, False, True, False, -1, "********",
             None, False, None)]


def _constraints(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    rows: Rows = []
    for rel in rels:
        positions = {name: i for i, (name, _, _) in enumerate(rel.columns, start=1)}
        if rel.keys and all(k in positions for k in rel.keys):
            rows.append((stable_oid(rel.schema, rel.name, "pkey"), f"{rel.name}_pkey",
                         stable_oid(rel.schema), "p", False, False, True, rel.oid, 0, 0, 0, 0,
                         " ", " ", " ", True, 0, True, [positions[k] for k in rel.keys], None,
                         None))
    return rows


def _am(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    return [(2, "heap", "heap_tableam_handler", "t"), (403, "btree", "bthandler", "i")]


def _schemata(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    names = ["pg_catalog", "information_schema", *databases]
    return [(DATABASE, n, ctx.user, None, None, None, None) for n in names]


def _tables(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    return [(DATABASE, r.schema, r.name, "VIEW" if r.kind == "v" else "BASE TABLE", None,
             None, None, None, None, "NO" if r.kind == "v" else "YES", "NO", None)
            for r in rels]


def _information_columns(databases: list[str], rels: list[Relation],
                         ctx: CatalogContext) -> Rows:
    from hudisql.server.types import DISPLAY_NAMES

    rows: Rows = []
    for rel in rels:
        for number, (name, dtype, nullable) in enumerate(rel.columns, start=1):
            pg, typmod = pg_type_of(dtype)
            precision = scale = None
            if pg.oid == 1700:
                precision, scale = (typmod - 4) >> 16, (typmod - 4) & 0xFFFF
            elif pg.oid in (20, 21, 23):
                precision, scale = {20: 64, 21: 16, 23: 32}[pg.oid], 0
            rows.append((DATABASE, rel.schema, rel.name, name, number, None,
                         "YES" if nullable else "NO", DISPLAY_NAMES.get(pg.oid, pg.name),
                         typmod - 4 if pg.oid in (1042, 1043) and typmod >= 4 else None, None,
                         precision, 10 if precision is not None else None, scale, None, None,
                         None, DATABASE, "pg_catalog", BY_OID[pg.oid].name, str(number),
                         "YES" if rel.kind == "r" else "NO"))
    return rows


def _activity(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    rows: Rows = []
    for a in ctx.activity:
        start = None if a.query_start is None else dt.datetime.fromtimestamp(a.query_start,
                                                                             dt.UTC)
        rows.append((stable_oid(DATABASE), DATABASE, a.pid, None, OWNER_OID, a.user,
                     a.application_name, None, None, None, None, start, start, start, None,
                     None, "active" if a.query is not None else "idle", None, None, None,
                     a.query or "", "client backend"))
    return rows


def _pg_tables(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    return [(r.schema, r.name, ctx.user, None, bool(r.keys), False, False, False)
            for r in rels if r.kind == "r"]


def _pg_views(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    return [(r.schema, r.name, ctx.user, None) for r in rels if r.kind == "v"]


def _stat_user_tables(databases: list[str], rels: list[Relation],
                      ctx: CatalogContext) -> Rows:
    # Row counts are unknown without reading the table: NULL, as for a never-analyzed table.
    return [(r.oid, r.schema, r.name, None, None, None, None, None, None, None, None, None)
            for r in rels if r.kind == "r"]


def _empty(databases: list[str], rels: list[Relation], ctx: CatalogContext) -> Rows:
    return []


_ROWS = {
    "pg_namespace": _namespaces, "pg_class": _classes, "pg_attribute": _attributes,
    "pg_type": _types, "pg_description": _descriptions, "pg_database": _databases,
    "pg_settings": _settings, "pg_roles": _roles, "pg_constraint": _constraints,
    "pg_am": _am, "pg_index": _empty, "pg_proc": _procs, "pg_range": _empty,
    "pg_enum": _empty, "pg_extension": _empty, "pg_attrdef": _empty, "pg_inherits": _empty,
    "pg_collation": _empty, "pg_policy": _empty, "pg_statistic_ext": _empty,
    "pg_publication": _empty, "pg_publication_rel": _empty,
    "pg_publication_namespace": _empty, "pg_trigger": _empty, "pg_rewrite": _empty,
    "pg_foreign_table": _empty, "pg_tablespace": _empty, "pg_depend": _empty,
    "pg_sequence": _empty,
    "pg_user": lambda d, r, ctx: [(ctx.user, OWNER_OID, False, False, False, False,
                                   "********", None, None)],
    "pg_stat_activity": _activity, "pg_tables": _pg_tables, "pg_views": _pg_views,
    "pg_matviews": _empty, "pg_stat_user_tables": _stat_user_tables,
    "information_schema_schemata": _schemata, "information_schema_tables": _tables,
    "information_schema_columns": _information_columns,
}


def regclass_oid(name: str, rels: Iterable[Relation] = ()) -> int | None:
    """The OID ``'name'::regclass`` stands for: an emulated catalog table's, else a stable
    hash of ``[schema.]name``."""
    bare = name.strip('"').removeprefix("pg_catalog.")
    if bare in CLASS_OIDS:
        return CLASS_OIDS[bare]
    schema, _, table = name.rpartition(".")
    return stable_oid(schema.strip('"') or "default", table.strip('"').lower())
