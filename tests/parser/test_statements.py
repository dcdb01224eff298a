"""hudisql statements: one line per grammar form, per pass-through look-alike, per error."""

from __future__ import annotations

import pytest

from hudisql.errors import SqlParseError
from hudisql.parser import (
    AlterTableAddColumns,
    AlterTableRename,
    Assignment,
    ColumnSpec,
    Command,
    CreateTable,
    Delete,
    DropTable,
    Insert,
    Merge,
    MergeClause,
    RollbackToInstant,
    ShowCommits,
    ShowLogBlocks,
    ShowTimeline,
    TableName,
    Update,
    parse_script,
)


def T(*parts: str) -> TableName:
    return TableName(parts)


C, A, M, CT, TL = ColumnSpec, Assignment, MergeClause, CreateTable, ShowTimeline
ID = (C("id", "INT"),)
COLS = "(id INT, name STRING, ts BIGINT, dt STRING)"
IDS = (C("id", "INT"), C("name", "STRING"), C("ts", "BIGINT"), C("dt", "STRING"))
HUDI = f"CREATE TABLE t {COLS} USING hudi"

# fmt: off
FORMS: list[tuple[str, Command]] = [
    # SHOW TIMELINE
    ("SHOW TIMELINE t", TL(T("t"))),
    ("SHOW TIMELINE ON t", TL(T("t"))),
    ("show timeline on db.t limit 10", TL(T("db", "t"), limit=10)),
    ("SHOW TIMELINE ON `my db`.`my t`", TL(T("my db", "my t"))),
    ("SHOW TIMELINE ON spark_catalog.db.t", TL(T("spark_catalog", "db", "t"))),
    ("SHOW TIMELINE ON '/data/trips'", TL(path="/data/trips")),
    ("SHOW TIMELINE 's3://bucket/t' LIMIT 0", TL(path="s3://bucket/t", limit=0)),
    ("SHOW TIMELINE ON timeline", TL(T("timeline"))),
    ("SHOW\n  TIMELINE -- of the trips\n  ON trips", TL(T("trips"))),
    # CALL procedures
    ("CALL show_timeline(table => 't')", TL(T("t"), limit=20)),
    ("CALL show_timeline(table => 'db.t', limit => 5)", TL(T("db", "t"), limit=5)),
    ("CALL show_timeline(path => '/p')", TL(path="/p", limit=20)),
    ("CALL show_timeline('t', NULL, 3)", TL(T("t"), limit=3)),
    ("CALL show_timeline(table => '`a b`.c')", TL(T("a b", "c"), limit=20)),
    ("CALL system.show_commits(table => 't')", ShowCommits(T("t"), 10)),
    ("call SHOW_COMMITS('t', 2)", ShowCommits(T("t"), 2)),
    ("CALL show_commits(LIMIT => 1, Table => 't')", ShowCommits(T("t"), 1)),
    ("CALL rollback_to_instant(table => 't', instant_time => '20240101120000123')",
     RollbackToInstant(T("t"), "20240101120000123")),
    ("CALL rollback_to_instant('db.t', '20240101120000')",
     RollbackToInstant(T("db", "t"), "20240101120000")),
    ("CALL show_log_blocks(table => 't')", ShowLogBlocks(T("t"))),
    ("CALL show_log_blocks('db.t', 'f1-0')", ShowLogBlocks(T("db", "t"), "f1-0")),
    ("CALL show_log_blocks(file_id => 'f1-0', table => 't')", ShowLogBlocks(T("t"), "f1-0")),
    # CREATE TABLE ... USING hudi
    ("CREATE TABLE t (id INT) USING hudi", CT(T("t"), ID)),
    ("create table t (id INT) using HUDI", CT(T("t"), ID)),
    ("CREATE TABLE t (id INT) USING `hudi`", CT(T("t"), ID)),
    ("CREATE TABLE IF NOT EXISTS db.t (id BIGINT NOT NULL COMMENT 'k; id', v DECIMAL(10, 2)) "
     "USING hudi",
     CT(T("db", "t"), (C("id", "BIGINT", False, "k; id"), C("v", "DECIMAL(10, 2)")),
        if_not_exists=True)),
    ("CREATE TABLE t (a ARRAY<STRING>, m MAP<STRING, INT>, s STRUCT<x: INT, y: STRING>) USING hudi",
     CT(T("t"), (C("a", "ARRAY<STRING>"), C("m", "MAP<STRING, INT>"),
                 C("s", "STRUCT<x: INT, y: STRING>")))),
    ("CREATE TABLE t (ts TIMESTAMP, d DATE, b BINARY, f DOUBLE) USING hudi",
     CT(T("t"), (C("ts", "TIMESTAMP"), C("d", "DATE"), C("b", "BINARY"), C("f", "DOUBLE")))),
    (f"{HUDI} PARTITIONED BY (dt)", CT(T("t"), IDS, ("dt",))),
    (f"{HUDI} PARTITIONED BY (dt, name)", CT(T("t"), IDS, ("dt", "name"))),
    (f"{HUDI} TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = 'mor')",
     CT(T("t"), IDS, primary_key=("id",), precombine_field="ts", table_type="mor",
        properties={"primaryKey": "id", "preCombineField": "ts", "type": "mor"})),
    (f"{HUDI} TBLPROPERTIES (primarykey='id, name', TYPE='COW')",
     CT(T("t"), IDS, primary_key=("id", "name"), table_type="cow",
        properties={"primarykey": "id, name", "TYPE": "COW"})),
    ("CREATE TABLE t (id INT) USING hudi TBLPROPERTIES ('hoodie.index.type' = 'BLOOM', "
     "hoodie.datasource.write.hive_style_partitioning = true, hoodie.cleaner.commits.retained 5)",
     CT(T("t"), ID, properties={"hoodie.index.type": "BLOOM",
                                "hoodie.datasource.write.hive_style_partitioning": "true",
                                "hoodie.cleaner.commits.retained": "5"})),
    ("CREATE TABLE t (id INT) USING hudi OPTIONS (type = 'mor')",
     CT(T("t"), ID, table_type="mor", properties={"type": "mor"})),
    ("CREATE TABLE t USING hudi LOCATION '/data/existing'", CT(T("t"), location="/data/existing")),
    ("CREATE TABLE t (id INT) USING hudi LOCATION 's3://b/t' COMMENT 'trips; raw' "
     "TBLPROPERTIES (primaryKey = 'id')",
     CT(T("t"), ID, primary_key=("id",), properties={"primaryKey": "id"}, location="s3://b/t",
        comment="trips; raw")),
    ("CREATE TABLE t USING hudi TBLPROPERTIES (primaryKey = 'id') AS SELECT 1 AS id",
     CT(T("t"), primary_key=("id",), properties={"primaryKey": "id"}, query="SELECT 1 AS id")),
    ("CREATE TABLE t USING hudi SELECT 1 AS id", CT(T("t"), query="SELECT 1 AS id")),
    ("CREATE TABLE t USING hudi AS WITH s AS (SELECT 1 AS id) SELECT * FROM s",
     CT(T("t"), query="WITH s AS (SELECT 1 AS id) SELECT * FROM s")),
    ("CREATE TABLE t USING hudi PARTITIONED BY (dt) AS SELECT 1 AS id, 'x' AS dt",
     CT(T("t"), partitioned_by=("dt",), query="SELECT 1 AS id, 'x' AS dt")),
    # DROP TABLE
    ("DROP TABLE t", DropTable(T("t"))),
    ("DROP TABLE IF EXISTS db.t PURGE", DropTable(T("db", "t"), if_exists=True, purge=True)),
    # ALTER TABLE
    ("ALTER TABLE t ADD COLUMNS (c STRING)", AlterTableAddColumns(T("t"), (C("c", "STRING"),))),
    ("ALTER TABLE t ADD COLUMN c INT FIRST",
     AlterTableAddColumns(T("t"), (C("c", "INT", position="FIRST"),))),
    ("ALTER TABLE db.t ADD COLUMNS (a INT NOT NULL COMMENT 'x', p.z DOUBLE AFTER p.y)",
     AlterTableAddColumns(T("db", "t"), (C("a", "INT", False, "x"),
                                         C("p.z", "DOUBLE", position="AFTER p.y")))),
    ("ALTER TABLE db.t RENAME TO db.u", AlterTableRename(T("db", "t"), T("db", "u"))),
    # INSERT
    ("INSERT INTO t VALUES (1, 'a;b')", Insert(T("t"), "VALUES (1, 'a;b')")),
    ("INSERT INTO TABLE t SELECT * FROM s", Insert(T("t"), "SELECT * FROM s")),
    ("INSERT OVERWRITE t SELECT 1", Insert(T("t"), "SELECT 1", overwrite=True)),
    ("INSERT OVERWRITE TABLE t PARTITION (dt = '2024-01-01', hr) SELECT 1, 2",
     Insert(T("t"), "SELECT 1, 2", True, partition=(("dt", "'2024-01-01'"), ("hr", None)))),
    ("INSERT INTO t PARTITION (dt = '1') IF NOT EXISTS SELECT 1",
     Insert(T("t"), "SELECT 1", partition=(("dt", "'1'"),), if_not_exists=True)),
    ("INSERT INTO t (a, `b c`) VALUES (1, 2)",
     Insert(T("t"), "VALUES (1, 2)", columns=("a", "b c"))),
    ("INSERT INTO t BY NAME SELECT 1 AS a", Insert(T("t"), "SELECT 1 AS a", by_name=True)),
    ("INSERT INTO t (SELECT 1)", Insert(T("t"), "(SELECT 1)")),
    ("INSERT INTO t TABLE s", Insert(T("t"), "TABLE s")),
    ("INSERT INTO t FROM s SELECT *", Insert(T("t"), "FROM s SELECT *")),
    ("INSERT INTO t\n-- the rows\nSELECT 1", Insert(T("t"), "SELECT 1")),
    ("WITH s AS (SELECT 1 AS id) INSERT INTO t SELECT * FROM s",
     Insert(T("t"), "WITH s AS (SELECT 1 AS id)\nSELECT * FROM s")),
    ("WITH s AS (SELECT 1) INSERT OVERWRITE TABLE t SELECT * FROM s",
     Insert(T("t"), "WITH s AS (SELECT 1)\nSELECT * FROM s", overwrite=True)),
    # UPDATE
    ("UPDATE t SET a = 1", Update(T("t"), (A("a", "1"),))),
    ("UPDATE db.t AS x SET x.a = x.a + 1, b = 'v;w' WHERE x.id IN (1, 2)",
     Update(T("db", "t"), (A("x.a", "x.a + 1"), A("b", "'v;w'")), "x", "x.id IN (1, 2)")),
    ("UPDATE t x SET a = CASE WHEN b THEN 1 ELSE 2 END WHERE c",
     Update(T("t"), (A("a", "CASE WHEN b THEN 1 ELSE 2 END"),), "x", "c")),
    ("UPDATE t SET s = named_struct('a', 1), arr = transform(arr, e -> e + 1)",
     Update(T("t"), (A("s", "named_struct('a', 1)"), A("arr", "transform(arr, e -> e + 1)")))),
    ("UPDATE t SET a = (SELECT max(a) FROM s WHERE s.k = t.k) WHERE EXISTS (SELECT 1 FROM s)",
     Update(T("t"), (A("a", "(SELECT max(a) FROM s WHERE s.k = t.k)"),),
            where="EXISTS (SELECT 1 FROM s)")),
    # DELETE
    ("DELETE FROM t", Delete(T("t"))),
    ("DELETE FROM t WHERE id = 1 OR name LIKE 'x%'",
     Delete(T("t"), where="id = 1 OR name LIKE 'x%'")),
    ("DELETE FROM db.t AS d WHERE d.id > (SELECT max(id) FROM s)",
     Delete(T("db", "t"), "d", "d.id > (SELECT max(id) FROM s)")),
    ("DELETE FROM t d WHERE d.x IS NULL", Delete(T("t"), "d", "d.x IS NULL")),
    ("DELETE FROM t first WHERE first.x = 1", Delete(T("t"), "first", "first.x = 1")),
    # MERGE
    ("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *",
     Merge(T("t"), "s", "t.id = s.id", (M("matched", "update", star=True),))),
    ("MERGE INTO db.t AS g USING db.s AS s ON g.id = s.id WHEN NOT MATCHED THEN INSERT *",
     Merge(T("db", "t"), "db.s", "g.id = s.id", (M("not_matched", "insert", star=True),),
           "g", "s")),
    ("MERGE INTO t USING (SELECT * FROM s WHERE op <> 'x') u ON t.id = u.id "
     "WHEN MATCHED AND u.op = 'D' THEN DELETE "
     "WHEN MATCHED THEN UPDATE SET t.v = u.v, t.n = t.n + 1 "
     "WHEN NOT MATCHED BY TARGET AND u.op <> 'D' THEN INSERT (id, v) VALUES (u.id, u.v) "
     "WHEN NOT MATCHED BY SOURCE THEN DELETE",
     Merge(T("t"), "(SELECT * FROM s WHERE op <> 'x')", "t.id = u.id", (
         M("matched", "delete", "u.op = 'D'"),
         M("matched", "update", assignments=(A("t.v", "u.v"), A("t.n", "t.n + 1"))),
         M("not_matched", "insert", "u.op <> 'D'", insert_columns=("id", "v"),
           insert_values=("u.id", "u.v")),
         M("not_matched_by_source", "delete"),
     ), source_alias="u")),
    ("MERGE INTO t target USING s source ON target.k = source.k WHEN MATCHED THEN DELETE",
     Merge(T("t"), "s", "target.k = source.k", (M("matched", "delete"),), "target", "source")),
    ("MERGE INTO t USING s ON t.k = s.k AND CASE WHEN s.a THEN true ELSE false END "
     "WHEN NOT MATCHED BY SOURCE AND t.old THEN UPDATE SET flag = true",
     Merge(T("t"), "s", "t.k = s.k AND CASE WHEN s.a THEN true ELSE false END",
           (M("not_matched_by_source", "update", "t.old", (A("flag", "true"),)),))),
]
# fmt: on


@pytest.mark.parametrize(("sql", "command"), FORMS, ids=[f[0][:60] for f in FORMS])
def test_grammar_form(sql: str, command: Command) -> None:
    (statement,) = parse_script(sql)
    assert statement.command == command
    assert statement.text == sql


# fmt: off
PASS_THROUGH = [
    'SELECT 1',
    "select * from t where x = 'SHOW TIMELINE t'",
    'SHOW TABLES',
    'SHOW TBLPROPERTIES t',
    'SHOW CREATE TABLE t',
    'CREATE TABLE t (a INT) USING parquet',
    'CREATE TABLE t (hudi INT) USING parquet',
    'CREATE TABLE t USING delta AS SELECT 1',
    "CREATE TABLE t AS SELECT 'USING hudi' AS x",
    'CREATE TABLE t USING parquet AS SELECT * FROM a JOIN b USING (hudi)',
    'CREATE TABLE t LIKE s',
    'CREATE OR REPLACE TABLE t USING delta AS SELECT 1',
    'CREATE OR REPLACE TEMPORARY VIEW v AS SELECT 1',
    'CREATE VIEW v AS SELECT * FROM hudi_table',
    "ALTER TABLE t SET TBLPROPERTIES ('a' = 'b')",
    'ALTER TABLE t RENAME COLUMN a TO b',
    "ALTER TABLE t ADD PARTITION (dt = '1')",
    'ALTER TABLE t DROP COLUMNS (a)',
    'ALTER VIEW v AS SELECT 1',
    "INSERT OVERWRITE DIRECTORY '/x' USING parquet SELECT 1",
    "INSERT OVERWRITE LOCAL DIRECTORY '/x' SELECT 1",
    "WITH s AS (SELECT 1) INSERT OVERWRITE LOCAL DIRECTORY '/x' SELECT * FROM s",
    "WITH s AS (SELECT 1) INSERT OVERWRITE DIRECTORY '/x' USING parquet SELECT * FROM s",
    'INSERT INTO t REPLACE WHERE a = 1 SELECT 1',
    "INSERT INTO t WITH (k = 'v') SELECT 1",
    'WITH s AS (SELECT 1) SELECT * FROM s',
    "WITH s AS (SELECT 'INSERT INTO t') SELECT * FROM s",
    'FROM s INSERT INTO t SELECT *',
    'DROP VIEW v',
    'DROP DATABASE d',
    'DELETE t WHERE a = 1',
    'SELECT `CALL` FROM x',
    '`SHOW` TIMELINE t',
    'EXPLAIN SELECT 1',
    'EXPLAIN SHOW TIMELINE t',
    'DESCRIBE t',
    'REFRESH TABLE t',
    'CACHE TABLE t',
    'SET spark.sql.shuffle.partitions = 4',
    'VALUES (1)',
]
# fmt: on


@pytest.mark.parametrize("sql", PASS_THROUGH)
def test_passes_through(sql: str) -> None:
    (statement,) = parse_script(sql)
    assert statement.command is None
    assert statement.text == sql


# (sql, line, column, a fragment of the message)
# fmt: off
ERRORS: list[tuple[str, int, int, str]] = [
    ('SHOW TIMELINE ON', 1, 17, 'needs a table name or a quoted path'),
    ('SHOW TIMELINE', 1, 14, 'needs a table name or a quoted path'),
    ('SHOW TIMELINE LIMIT 5', 1, 15, 'needs a table name or a quoted path'),
    ('SHOW TIMELINE t LIMIT -1', 1, 23, "LIMIT must be a whole number of 0 or more, found '-1'"),
    ('SHOW TIMELINE t LIMIT 1.5', 1, 23, "found '1.5'"),
    ('SHOW TIMELINE t LIMIT ten', 1, 23, "found 'ten'"),
    ('SHOW TIMELINE t LIMIT', 1, 22, 'found the end of the statement'),
    ('SHOW TIMELINE t u', 1, 17, "unexpected 'u'"),
    ('SHOW TIMELINE ON t\n  LIMIT 5 5', 2, 11, "unexpected '5'"),
    ("CREATE TABLE t (id INT) USING hudi TBLPROPERTIES (type = 'xyz')", 1, 58, "must be 'cow' or 'mor', not 'xyz'"),  # noqa: E501
    ('CREATE TABLE t (id INT) USING hudi TBLPROPERTIES (type = mor)', 1, 58, 'expected a value for property type'),  # noqa: E501
    ("CREATE TABLE t (id INT) USING hudi TBLPROPERTIES (primaryKey = 'uuid')", 1, 64, 'primaryKey column uuid is not among'),  # noqa: E501
    ("CREATE TABLE t (id INT) USING hudi TBLPROPERTIES (primaryKey = 'id,')", 1, 64, 'empty column name'),  # noqa: E501
    ("CREATE TABLE t (id INT) USING hudi TBLPROPERTIES (preCombineField = 'ts')", 1, 69, 'preCombineField column ts'),  # noqa: E501
    ("CREATE TABLE t (id INT) USING hudi TBLPROPERTIES (primary_key = 'id')", 1, 65, "unknown table property 'primary_key'"),  # noqa: E501
    ('CREATE TABLE t (id INT) USING hudi PARTITIONED BY (dt)', 1, 36, 'partition column dt is not among'),  # noqa: E501
    ('CREATE TABLE t (id INT) USING hudi PARTITIONED BY (dt STRING)', 1, 55, 'lists column names only'),  # noqa: E501
    ('CREATE TABLE t USING hudi', 1, 1, 'needs column definitions, AS SELECT, or the LOCATION'),
    ('CREATE TABLE t USING hudi PARTITIONED BY (dt)', 1, 1, 'needs column definitions'),
    ('CREATE TABLE t (id INT) USING hudi AS SELECT 1 AS id', 1, 1, 'remove the column list'),
    ('CREATE TABLE t (id FOO) USING hudi', 1, 20, 'expected a data type for column id'),
    ('CREATE TABLE t (id) USING hudi', 1, 19, 'expected a data type for column id'),
    ('CREATE TABLE t (id INT DEFAULT 1) USING hudi', 1, 24, "column option 'DEFAULT' of column id"),
    ('CREATE TABLE t (id INT, ID STRING) USING hudi', 1, 25, 'column ID is defined twice'),
    ('CREATE TABLE t (id INT id2 INT) USING hudi', 1, 24, "column option 'id2' of column id"),
    ('CREATE TABLE t (id INT) USING hudi CLUSTERED BY (id) INTO 4 BUCKETS', 1, 36, "'CLUSTERED' is not supported"),  # noqa: E501
    ('CREATE TABLE t (id INT) USING hudi STORED AS PARQUET', 1, 36, "'STORED' is not supported"),
    ("CREATE TABLE t (id INT) USING hudi LOCATION '/a' LOCATION '/b'", 1, 50, 'LOCATION is given twice'),  # noqa: E501
    ("CREATE TABLE t (id INT) USING hudi TBLPROPERTIES (type = 'cow') OPTIONS (type = 'mor')", 1, 65, 'given twice'),  # noqa: E501
    ('CREATE TABLE t (id INT) USING hudi LOCATION /data/t', 1, 45, 'expected the location as a quoted string'),  # noqa: E501
    ('CREATE OR REPLACE TABLE t (id INT) USING hudi', 1, 1, 'CREATE OR REPLACE TABLE is not supported for hudi'),  # noqa: E501
    ('CREATE TABLE t (id INT) USING parquet USING hudi', 1, 31, "expected hudi after USING"),
    ('REPLACE TABLE t (id INT) USING hudi', 1, 1, 'DROP TABLE the table first'),
    ('CREATE TABLE (id INT) USING hudi', 1, 14, 'expected the name of the table to create'),
    ('CALL nope(1)', 1, 6, "unknown procedure 'nope'; hudisql knows rollback_to_instant, run_clean, run_clustering, run_compaction, run_indexer, run_log_compaction, show_archived_commits, show_clustering, show_commits, show_compaction, show_data_skipping, show_indexes, show_log_blocks, show_log_compaction, show_metadata_table_column_stats, show_metadata_table_files, show_metadata_table_partitions, show_timeline, upgrade_table, validate_metadata_table"),  # noqa: E501
    ("CALL show_commits(tabel => 'x')", 1, 19, "show_commits has no parameter 'tabel'; its parameters are table, limit"),  # noqa: E501
    ('CALL show_commits()', 1, 6, 'show_commits needs table => ...'),
    ('CALL show_commits(limit => 3)', 1, 6, 'show_commits needs table'),
    ('CALL show_log_blocks(file_id => \'f\')', 1, 6, 'show_log_blocks needs table'),
    ("CALL show_commits(table => 't', limit => 'ten')", 1, 42, "limit must be a whole number, not 'ten'"),  # noqa: E501
    ("CALL show_commits(table => 't', limit => true)", 1, 42, 'limit must be a whole number, not True'),  # noqa: E501
    ("CALL show_commits(table => 't', limit => -2)", 1, 42, 'limit must be a whole number of 0 or more, not -2'),  # noqa: E501
    ('CALL show_commits(table => 1)', 1, 28, 'table must be a quoted string, not 1'),
    ('CALL show_commits(table => t)', 1, 28, 'procedure arguments are literals'),
    ("CALL show_commits(table => 't', limit => 1 + 1)", 1, 44, 'expected ) to close the arguments'),
    ("CALL show_commits('t', 1, 2)", 1, 27, 'show_commits takes at most 2 arguments'),
    ("CALL show_commits(limit => 1, 't')", 1, 31, 'a positional argument cannot follow a named one'),  # noqa: E501
    ("CALL show_commits(table => 't', table => 'u')", 1, 33, 'argument table is given twice'),
    ("CALL show_commits(table => 'a b')", 1, 28, "'a b' is not a table name"),
    ("CALL show_commits(table => 'db.')", 1, 28, "'db.' is not a table name"),
    ('CALL show_commits', 1, 18, 'expected ( after CALL show_commits'),
    ("CALL show_commits(table => 't'", 1, 31, 'expected ) to close the arguments of show_commits'),
    ("CALL show_timeline(table => 't', path => '/x')", 1, 6, 'needs exactly one of table'),
    ('CALL show_timeline(limit => 5)', 1, 6, 'needs exactly one of table'),
    ("CALL rollback_to_instant(table => 't', instant_time => '2024')", 1, 56, "'2024' is not an instant time"),  # noqa: E501
    ("CALL rollback_to_instant(table => 't')", 1, 6, 'rollback_to_instant needs instant_time'),
    ('CALL', 1, 5, 'expected a procedure name after CALL'),
    ('UPDATE t SET', 1, 13, 'expected a column to set in UPDATE ... SET'),
    ('UPDATE t SET a =', 1, 17, 'expected the value of a'),
    ('UPDATE t SET a = WHERE b', 1, 18, "expected the value of a, found 'WHERE'"),
    ('UPDATE t SET a 1', 1, 16, 'expected = after column a'),
    ('UPDATE t WHERE a = 1', 1, 10, "expected SET here, found 'WHERE'"),
    ('UPDATE t SET a = 1 WHERE', 1, 25, 'expected the WHERE condition'),
    ('UPDATE t SET a = 1 LIMIT 1', 1, 20, "unexpected 'LIMIT'"),
    ('UPDATE', 1, 7, 'expected the name of the table to update'),
    ('DELETE FROM t WHERE a >', 1, 24, 'the WHERE condition is malformed'),
    ('DELETE FROM', 1, 12, 'expected the name of the table to delete from'),
    ('DELETE FROM t WHERE a = 1 ORDER BY a', 1, 27, "unexpected 'ORDER BY'"),
    ('INSERT INTO t', 1, 14, 'expected the query to insert'),
    ('INSERT INTO t garbage here', 1, 15, "expected the query to insert (SELECT ..., VALUES ..., TABLE t), found 'garbage'"),  # noqa: E501
    ('INSERT INTO t (a, b VALUES (1)', 1, 21, 'expected ) to close the column list'),
    ('INSERT INTO t PARTITION (dt = ) SELECT 1', 1, 31, 'expected a partition value'),
    ('INSERT INTO', 1, 12, 'expected the name of the table to insert into'),
    ('MERGE INTO t USING s ON a = b', 1, 30, 'MERGE needs at least one WHEN clause'),
    ('MERGE INTO t USING s WHEN MATCHED THEN DELETE', 1, 22, "expected ON here, found 'WHEN'"),
    ('MERGE INTO t USING s ON a = b WHEN MATCHED THEN INSERT *', 1, 49, 'expected UPDATE SET ... or DELETE after THEN'),  # noqa: E501
    ('MERGE INTO t USING s ON a = b WHEN NOT MATCHED THEN DELETE', 1, 53, "expected INSERT here, found 'DELETE'"),  # noqa: E501
    ('MERGE INTO t USING s ON a = b WHEN NOT MATCHED THEN INSERT (a, b) VALUES (1)', 1, 60, 'INSERT names 2 columns but gives 1 values'),  # noqa: E501
    ('MERGE INTO t USING s ON a = b WHEN MATCHED THEN DELETE WHEN MATCHED AND c THEN DELETE', 1, 31, 'only the last WHEN clause of its kind'),  # noqa: E501
    ('MERGE INTO t USING s ON a = b WHEN NOT MATCHED BY SOURCE THEN UPDATE SET *', 1, 31, 'cannot UPDATE SET *'),  # noqa: E501
    ('MERGE INTO t USING (SELECT 1 ON a = b', 1, 20, 'the ( opening the source query is never closed'),  # noqa: E501
    ('MERGE INTO t USING s ON a = b WHEN MATCHED DELETE', 1, 44, 'expected THEN here'),
    ('MERGE INTO t USING s ON a = b WHEN SOMETIMES THEN DELETE', 1, 36, 'expected MATCHED here'),
    ('DROP TABLE', 1, 11, 'expected the name of the table to drop'),
    ('DROP TABLE t CASCADE', 1, 14, "unexpected 'CASCADE'"),
    ('ALTER TABLE t ADD COLUMNS (a)', 1, 29, 'expected a data type for column a'),
    ('ALTER TABLE t ADD COLUMNS (a INT', 1, 33, 'expected ) to close the column list'),
    ('ALTER TABLE t RENAME TO', 1, 24, 'expected the new table name after RENAME TO'),
    ('ALTER TABLE t RENAME TO u v', 1, 27, "unexpected 'v'"),
    ("SELECT 'abc", 1, 8, "unterminated string: it opens here and is never closed; add the closing '"),  # noqa: E501
    ('SELECT "abc', 1, 8, 'add the closing "'),
    ('SELECT `abc FROM t', 1, 8, 'unterminated quoted identifier'),
    ("SELECT r'abc", 1, 8, 'unterminated string'),
    ('SELECT 1 /* open', 1, 10, 'unterminated comment: it opens here and is never closed; add the closing */'),  # noqa: E501
    ('SELECT 1 /* a /* nested */ still open', 1, 10, 'unterminated comment'),
    ('SELECT /*+ BROADCAST(t) FROM t', 1, 8, 'unterminated comment'),
    ("SELECT 1;\nSELECT 2;\n  SELECT 'x;", 3, 10, 'unterminated string'),
    ("SELECT 1;\r\nSELECT 'x", 2, 8, 'unterminated string'),
    ("SELECT 'it\\'s", 1, 8, 'unterminated string'),
    ("SELECT X'ZZ'", 1, 8, 'malformed literal'),
    ('SELECT 1;\nSHOW TIMELINE ON', 2, 17, 'needs a table name'),
    ('-- a comment\n\tSHOW TIMELINE x LIMIT -1', 2, 24, "found '-1'"),
]
# fmt: on


@pytest.mark.parametrize(("sql", "line", "column", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_error(sql: str, line: int, column: int, message: str) -> None:
    with pytest.raises(SqlParseError) as caught:
        parse_script(sql)
    error = caught.value
    assert (error.line, error.column) == (line, column), str(error)
    text = str(error)
    assert text.startswith(f"line {line}, column {column}: ")
    assert message in text
    # The offending line is shown, with a caret under the column.
    _, shown, caret = text.rsplit("\n", 2)
    assert shown == "    " + sql.splitlines()[line - 1]
    assert caret.endswith("^") and len(caret) == 4 + column


def test_a_script_that_fails_anywhere_returns_nothing() -> None:
    with pytest.raises(SqlParseError):
        parse_script("SHOW TIMELINE t; SELECT 1; SHOW TIMELINE t LIMIT -1")


def test_table_name_renders_for_spark_and_people() -> None:
    name = T("my db", "t`x")
    assert (str(name), name.sql) == ("my db.t`x", "`my db`.`t``x`")
    assert (name.name, name.database, T("t").database) == ("t`x", "my db", None)


def test_create_table_derived_views() -> None:
    (statement,) = parse_script(
        "CREATE TABLE t (id INT) USING hudi "
        "TBLPROPERTIES (type = 'mor', 'hoodie.x' = '1', primaryKey = 'id')"
    )
    command = statement.command
    assert isinstance(command, CreateTable)
    assert command.hoodie_options == {"hoodie.x": "1"}
    assert command.hoodie_table_type == "MERGE_ON_READ"
    assert not command.registers_existing
    (registered,) = parse_script("CREATE TABLE t USING hudi LOCATION '/x'")
    assert isinstance(registered.command, CreateTable)
    assert registered.command.registers_existing
    assert registered.command.hoodie_table_type == "COPY_ON_WRITE"


def test_merge_source_query_reads_a_table_or_a_subquery() -> None:
    script = (
        "MERGE INTO t USING db.s ON a = b WHEN MATCHED THEN DELETE;"
        "MERGE INTO t USING (SELECT 1 AS a) s ON a = b WHEN MATCHED THEN DELETE"
    )
    commands = [s.command for s in parse_script(script)]
    assert [c.source_query for c in commands if isinstance(c, Merge)] == [
        "SELECT * FROM db.s",
        "SELECT * FROM (SELECT 1 AS a)",
    ]


def test_target_decided_commands_fall_back_to_spark() -> None:
    fallback = {type(c).__name__ for _, c in FORMS if type(c).spark_fallback}
    ours = {type(c).__name__ for _, c in FORMS if not type(c).spark_fallback}
    assert fallback == {
        "AlterTableAddColumns", "AlterTableRename", "Delete", "DropTable", "Insert", "Merge",
        "Update",
    }
    assert ours == {
        "CreateTable", "RollbackToInstant", "ShowCommits", "ShowLogBlocks", "ShowTimeline"}
