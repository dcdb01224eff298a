-- Pass-through corpus: varied Spark SQL that hudisql must hand to Spark byte for byte.
-- It runs in order on a fresh Spark session, inside a database the test creates and
-- makes current (tables are parquet, views are temporary or over parquet; no hive).
-- Temporary views are CREATE OR REPLACE so the corpus can run twice in one session.

CREATE OR REPLACE TEMPORARY VIEW cv_people AS
SELECT * FROM VALUES
  (1, 'Ada', 'eng', 120.5, DATE'2024-01-15'),
  (2, 'Bob', 'ops', 80.0, DATE'2024-02-01'),
  (3, 'Cy', 'eng', 99.9, DATE'2024-02-20'),
  (4, 'Dee', 'sales', NULL, DATE'2024-03-03'),
  (5, 'Eve', 'ops', 75.25, DATE'2024-03-30')
AS t(id, name, dept, salary, hired);

CREATE OR REPLACE TEMPORARY VIEW cv_depts AS
SELECT * FROM VALUES ('eng', 'Engineering', 10), ('ops', 'Operations', 20), ('hr', 'People', 30)
AS t(code, title, floor_no);

create or replace temporary view cv_events as
select * from values
  (1, 'click', timestamp'2024-01-01 10:00:00', map('k', 'v1')),
  (1, 'view',  timestamp'2024-01-01 10:05:00', map('k', 'v2')),
  (2, 'click', timestamp'2024-01-02 09:00:00', map('k', 'v3')),
  (3, 'buy',   timestamp'2024-01-03 12:30:00', map('k', 'v4'))
as t(user_id, kind, at, attrs);

CREATE OR REPLACE TEMPORARY VIEW `cv_odd name` AS SELECT 1 AS `select`, 'x;y' AS `from`;

CREATE TABLE pq_sales (id INT, item STRING, qty INT, price DECIMAL(10, 2), day STRING)
USING parquet
PARTITIONED BY (day)
COMMENT 'plain parquet; not hudi'
TBLPROPERTIES ('purpose' = 'corpus', 'type' = 'not-a-hudi-type');

INSERT INTO pq_sales VALUES
  (1, 'apple', 3, 1.20, '2024-01-01'),
  (2, 'pear', 1, 0.80, '2024-01-01'),
  (3, 'apple', 7, 1.10, '2024-01-02'),
  (4, 'plum; red', 2, 2.50, '2024-01-02');

INSERT INTO TABLE pq_sales PARTITION (day = '2024-01-03') SELECT 5, 'fig', 4, 3.00;

INSERT INTO pq_sales (id, item, qty, price, day) VALUES (6, 'kiwi', 9, 0.45, '2024-01-03');

INSERT INTO pq_sales BY NAME SELECT '2024-01-04' AS day, 'lime' AS item, 7 AS id, 1 AS qty, 0.30 AS price;

CREATE TABLE pq_people USING parquet AS SELECT id, name, dept FROM cv_people;

CREATE TABLE IF NOT EXISTS pq_people USING parquet AS SELECT 1 AS id;

create table pq_hudi_words (hudi STRING, `using` STRING) using parquet;

INSERT INTO pq_hudi_words VALUES ('USING hudi', 'CREATE TABLE x USING hudi');

CREATE TABLE pq_ctas_join USING parquet AS
SELECT p.id, d.title FROM cv_people p JOIN cv_depts d ON p.dept = d.code;

CREATE TABLE pq_like LIKE pq_people USING parquet;

CREATE TABLE pq_empty (a INT, b STRING COMMENT 'b; comment', c ARRAY<STRING>, d MAP<STRING, INT>,
  e STRUCT<x: INT, y: STRING>) USING parquet;

CREATE VIEW pv_eng AS SELECT * FROM pq_people WHERE dept = 'eng';

CREATE TABLE pq_overwrite (k STRING, v BIGINT) USING parquet;

INSERT OVERWRITE TABLE pq_overwrite SELECT 'a', 1;

INSERT OVERWRITE pq_overwrite VALUES ('b', 2), ('c', 3);

WITH src AS (SELECT 'd' AS k, 4L AS v) INSERT INTO pq_overwrite SELECT * FROM src;

FROM cv_people INSERT INTO pq_overwrite SELECT name, id WHERE id > 4;

SELECT * FROM pq_overwrite ORDER BY k;

SELECT 1;

SELECT 1 + 1 AS two, 'two' AS word, 2.0 / 3 AS ratio;

select id, name from cv_people where dept = 'eng' order by id;

SELECT dept, count(*) AS n, avg(salary) AS avg_salary FROM cv_people GROUP BY dept ORDER BY dept;

SELECT dept, sum(salary) FROM cv_people GROUP BY dept HAVING sum(salary) > 100 ORDER BY 1;

SELECT p.name, d.title
FROM cv_people p
JOIN cv_depts d ON p.dept = d.code
ORDER BY p.name;

SELECT p.name, d.title FROM cv_people p LEFT JOIN cv_depts d ON p.dept = d.code ORDER BY 1;

SELECT p.name, d.title FROM cv_people p RIGHT OUTER JOIN cv_depts d ON p.dept = d.code ORDER BY 2, 1;

SELECT p.name, d.title FROM cv_people p FULL OUTER JOIN cv_depts d ON p.dept = d.code ORDER BY 1, 2;

SELECT p.name FROM cv_people p LEFT SEMI JOIN cv_depts d ON p.dept = d.code ORDER BY 1;

SELECT p.name FROM cv_people p LEFT ANTI JOIN cv_depts d ON p.dept = d.code ORDER BY 1;

SELECT count(*) FROM cv_people CROSS JOIN cv_depts;

SELECT * FROM cv_depts d JOIN cv_people p ON d.code = p.dept AND p.salary > 90 ORDER BY p.id;

SELECT name FROM cv_people JOIN (SELECT code AS dept FROM cv_depts) USING (dept) ORDER BY name;

SELECT id, name, salary,
       rank() OVER (PARTITION BY dept ORDER BY salary DESC) AS rnk,
       sum(salary) OVER (PARTITION BY dept) AS dept_total
FROM cv_people
ORDER BY id;

SELECT id, lag(name) OVER (ORDER BY id) AS prev_name, lead(name, 2, 'none') OVER (ORDER BY id) AS next2
FROM cv_people ORDER BY id;

SELECT id, row_number() OVER w AS rn, avg(salary) OVER w AS running
FROM cv_people WINDOW w AS (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
ORDER BY id;

SELECT dept, name FROM cv_people QUALIFY row_number() OVER (PARTITION BY dept ORDER BY id) = 1 ORDER BY dept;

WITH eng AS (SELECT * FROM cv_people WHERE dept = 'eng')
SELECT name FROM eng ORDER BY name;

WITH a AS (SELECT 1 AS x), b AS (SELECT x + 1 AS y FROM a)
SELECT * FROM a CROSS JOIN b;

WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5)
SELECT sum(n) FROM r;

WITH
  -- a CTE whose body mentions INSERT INTO t; in a comment only
  totals AS (SELECT dept, sum(salary) AS s FROM cv_people GROUP BY dept)
SELECT * FROM totals WHERE s IS NOT NULL ORDER BY dept;

SELECT name FROM cv_people WHERE id IN (SELECT user_id FROM cv_events) ORDER BY name;

SELECT name FROM cv_people p WHERE EXISTS (SELECT 1 FROM cv_events e WHERE e.user_id = p.id) ORDER BY 1;

SELECT name, (SELECT count(*) FROM cv_events e WHERE e.user_id = p.id) AS events FROM cv_people p ORDER BY 1;

SELECT * FROM (SELECT dept, max(salary) AS top FROM cv_people GROUP BY dept) t WHERE top > 90 ORDER BY 1;

SELECT p.id, x.doubled FROM cv_people p, LATERAL (SELECT p.id * 2 AS doubled) x ORDER BY 1;

SELECT id FROM cv_people UNION SELECT user_id FROM cv_events ORDER BY id;

SELECT id FROM cv_people UNION ALL SELECT user_id FROM cv_events ORDER BY id;

SELECT id FROM cv_people INTERSECT SELECT user_id FROM cv_events ORDER BY id;

SELECT id FROM cv_people EXCEPT SELECT user_id FROM cv_events ORDER BY id;

SELECT id FROM cv_people MINUS SELECT user_id FROM cv_events ORDER BY id;

SELECT DISTINCT dept FROM cv_people ORDER BY dept;

SELECT count(DISTINCT dept), approx_count_distinct(dept) FROM cv_people;

SELECT dept, count(*) FROM cv_people GROUP BY ROLLUP (dept) ORDER BY dept NULLS LAST;

SELECT dept, year(hired) AS y, count(*) FROM cv_people GROUP BY CUBE (dept, year(hired)) ORDER BY 1, 2;

SELECT dept, grouping(dept), count(*) FROM cv_people GROUP BY GROUPING SETS ((dept), ()) ORDER BY 1;

SELECT * FROM (SELECT dept, salary FROM cv_people)
PIVOT (sum(salary) FOR dept IN ('eng' AS eng, 'ops' AS ops));

SELECT * FROM (SELECT 1 AS a, 2 AS b) UNPIVOT (v FOR col IN (a, b)) ORDER BY col;

SELECT id, n FROM cv_people LATERAL VIEW explode(array(1, 2)) e AS n WHERE id < 3 ORDER BY id, n;

SELECT id, pos, ch FROM cv_people LATERAL VIEW posexplode(split(name, '')) t AS pos, ch WHERE id = 1 ORDER BY pos;

SELECT explode(sequence(1, 4)) AS n;

SELECT inline(array(struct(1, 'a'), struct(2, 'b')));

SELECT * FROM range(3);

SELECT * FROM range(10, 20, 5) ORDER BY id;

VALUES (1, 'one'), (2, 'two');

TABLE cv_depts;

FROM cv_depts SELECT code WHERE floor_no > 10 ORDER BY code;

SELECT * FROM cv_people ORDER BY id LIMIT 2 OFFSET 1;

SELECT * FROM cv_people ORDER BY salary DESC NULLS LAST, id;

SELECT name FROM cv_people ORDER BY name DESC LIMIT 3;

SELECT * FROM cv_people SORT BY id;

SELECT * FROM cv_people DISTRIBUTE BY dept SORT BY id;

SELECT * FROM cv_people CLUSTER BY dept;

SELECT /*+ BROADCAST(d) */ p.name, d.title FROM cv_people p JOIN cv_depts d ON p.dept = d.code ORDER BY 1;

SELECT /*+ REPARTITION(2) */ count(*) FROM cv_people;

SELECT /*+ COALESCE(1) */ * FROM cv_depts ORDER BY code;

SELECT /*+ MERGE(p, d) */ count(*) FROM cv_people p JOIN cv_depts d ON p.dept = d.code;

SELECT /*+ SHUFFLE_HASH(d) */ p.id FROM cv_people p JOIN cv_depts d ON p.dept = d.code ORDER BY 1;

SELECT /*+ REBALANCE */ dept FROM cv_people ORDER BY dept;

SELECT CASE WHEN salary > 100 THEN 'high' WHEN salary > 80 THEN 'mid' ELSE 'low' END AS band, id
FROM cv_people ORDER BY id;

SELECT CASE dept WHEN 'eng' THEN 1 WHEN 'ops' THEN 2 END FROM cv_people ORDER BY id;

SELECT if(salary IS NULL, 'unknown', 'known'), coalesce(salary, 0), nvl(salary, -1), nullif(dept, 'ops')
FROM cv_people ORDER BY id;

SELECT upper(name), lower(dept), length(name), substring(name, 1, 2), concat_ws('-', name, dept)
FROM cv_people ORDER BY id;

SELECT regexp_replace('a1b22c333', '[0-9]+', '#'), regexp_extract('key=val', '(\\w+)=(\\w+)', 2);

SELECT split('a;b;c', ';'), size(split('a;b;c', ';'));

SELECT trim('  x  '), ltrim('  y'), rtrim('z  '), lpad('7', 3, '0'), rpad('7', 3, '*');

SELECT format_string('%s has %d', 'Ada', 3), printf('%.2f', 3.14159D);

SELECT instr('hudi;sql', ';'), locate('sql', 'hudi;sql'), replace('a;b', ';', ',');

SELECT initcap('hello world'), reverse('abc'), repeat('ab', 3), translate('abc', 'ab', 'xy');

SELECT date_add(DATE'2024-01-31', 1), date_sub(DATE'2024-03-01', 1), datediff(DATE'2024-03-01', DATE'2024-02-01');

SELECT year(hired), month(hired), dayofweek(hired), date_format(hired, 'yyyy/MM') FROM cv_people ORDER BY id;

SELECT to_date('2024-05-06'), to_timestamp('2024-05-06 07:08:09'), unix_timestamp('2024-01-01 00:00:00');

SELECT trunc(DATE'2024-05-17', 'MM'), date_trunc('HOUR', timestamp'2024-05-17 10:42:00'), last_day(DATE'2024-02-10');

SELECT make_date(2024, 2, 29), add_months(DATE'2024-01-31', 1), months_between(DATE'2024-03-01', DATE'2024-01-01');

SELECT INTERVAL 3 DAYS + DATE'2024-01-01', timestamp'2024-01-01 00:00:00' + INTERVAL '1-2' YEAR TO MONTH;

SELECT cast('42' AS INT), cast(3.9 AS BIGINT), cast(1 AS STRING), '7'::INT, try_cast('x' AS INT);

SELECT 10 DIV 3, 10 % 3, pow(2, 10), round(2.567, 2), floor(-1.5), ceil(1.2), abs(-3);

SELECT greatest(1, 5, 3), least(4, 2, 8), sign(-2.5), sqrt(16), ln(1), log10(1000);

SELECT 5 & 3, 5 | 3, 5 ^ 3, ~5, shiftleft(1, 4), bit_count(255);

SELECT array(1, 2, 3), array_contains(array(1, 2), 2), array_distinct(array(1, 1, 2)), sort_array(array(3, 1, 2));

SELECT transform(array(1, 2, 3), x -> x * 10), filter(array(1, 2, 3, 4), x -> x % 2 = 0);

SELECT aggregate(array(1, 2, 3), 0, (acc, x) -> acc + x), exists(array(1, 2), x -> x > 1);

SELECT zip_with(array(1, 2), array(10, 20), (a, b) -> a + b), array_join(array('a', 'b'), '; ');

SELECT map('a', 1, 'b', 2)['b'], map_keys(map('a', 1)), map_values(map('a', 1)), element_at(map('k', 'v'), 'k');

SELECT map_from_arrays(array('x', 'y'), array(1, 2)), map_filter(map('a', 1, 'b', 2), (k, v) -> v > 1);

SELECT named_struct('a', 1, 'b', 'two') AS s, struct(1 AS x, 2 AS y).y;

SELECT to_json(named_struct('a', 1, 'b', array(1, 2))), from_json('{"a": 1}', 'a INT').a;

SELECT get_json_object('{"k": {"n": 5}}', '$.k.n'), json_tuple('{"a": 1, "b": 2}', 'a', 'b');

SELECT schema_of_json('[{"col":0}]'), json_array_length('[1, 2, 3]');

SELECT attrs['k'], kind FROM cv_events ORDER BY at;

SELECT user_id, collect_list(kind) AS kinds FROM cv_events GROUP BY user_id ORDER BY user_id;

SELECT user_id, sort_array(collect_set(kind)) FROM cv_events GROUP BY user_id ORDER BY user_id;

SELECT min(at), max(at), count_if(kind = 'click') FROM cv_events;

SELECT percentile(salary, 0.5), percentile_approx(salary, 0.5), stddev_pop(salary), var_samp(salary) FROM cv_people;

SELECT max_by(name, salary), min_by(name, salary), first(name), last(name) FROM (SELECT * FROM cv_people ORDER BY id);

SELECT bool_and(salary > 50), bool_or(salary > 100), every(id > 0), some(id > 4) FROM cv_people;

SELECT dept, array_agg(id) FROM cv_people GROUP BY dept ORDER BY dept;

SELECT sha2('hudi', 256), md5('hudi'), crc32('hudi'), base64('hudi'), hex('hudi');

SELECT uuid() IS NOT NULL, monotonically_increasing_id() >= 0;

SELECT current_date() IS NOT NULL, current_timestamp() > timestamp'2000-01-01 00:00:00';

SELECT X'1F2E', 'a' || 'b', 'x' <=> NULL, NULL IS DISTINCT FROM 1;

SELECT 1 BETWEEN 0 AND 2, 'abc' LIKE 'a%', 'abc' RLIKE '^a.c$', 'ABC' ILIKE 'a%';

SELECT 'a' IN ('a', 'b'), 3 NOT IN (1, 2), NOT true, true AND NULL, false OR NULL;

SELECT typeof(1), typeof(1L), typeof(1.5), typeof(1.5D), typeof(1Y), typeof(1S), typeof(1BD);

SELECT 1e3, 1.5E-2, .5, 7L AS big;

SELECT 'UPDATE t SET a = 1; DELETE FROM t WHERE b = 2; MERGE INTO t USING s ON x' AS dml_text;

SELECT "SHOW TIMELINE ON t LIMIT 5; CALL show_commits(table => 'x')" AS hudi_text;

SELECT 'CREATE TABLE x USING hudi TBLPROPERTIES (type = ''mor'')' AS ddl_text;

SELECT 'it\'s; escaped', "double \"quoted\"; too", 'back\\slash;' AS s;

SELECT 'a''b', 'semi' ';' 'colon' AS adjacent;

SELECT r'\d+;\w*', R"raw \n; string";

SELECT '--not a comment', '/* nor this */', "-- nor; this";

SELECT 'héllo; wörld', '日本語;テキスト', '🙂;' AS unicode_text;

SELECT 1 AS `weird;name`, 2 AS `back``tick`, 3 AS `with space`, 4 AS `select`;

SELECT `select`, `from` FROM `cv_odd name`;

SELECT 1 /* ; inline block; */ + 1 AS x;

SELECT -- a line comment; with a semicolon
  2 AS two;

/* a leading block comment; with a semicolon */ SELECT 3 AS three;

-- a leading line comment
-- and another; still comment
SELECT 4 AS four;

SELECT /* nested /* comment; */ still; comment */ 5 AS five;

SELECT 6--trailing comment glued to the number
;

SELECT
  7 AS seven -- comment before FROM
FROM
  /* comment between keywords */
  range(1);

SELECT /**/ 8 /***/ AS eight;

SELECT 9 AS nine /* comment at the end */;

;;

SELECT 10 AS ten;;

SELECT
    p.id,
    p.name,
    d.title
FROM
    cv_people AS p
    INNER JOIN cv_depts AS d
        ON p.dept = d.code
WHERE
    p.salary > 0
ORDER BY
    p.id;

	SELECT	'tabs'	AS	t;

SELECT * FROM VALUES (1), (2), (3) AS t(x) |> WHERE x > 1 |> SELECT x * 2 AS y;

SELECT * FROM cv_people TABLESAMPLE (100 PERCENT) ORDER BY id;

SELECT * FROM cv_people TABLESAMPLE (2 ROWS) WHERE false;

DESCRIBE TABLE pq_sales;

DESC pq_people;

DESCRIBE QUERY SELECT id, name FROM cv_people;

DESCRIBE FUNCTION upper;

DESCRIBE FUNCTION EXTENDED abs;

SHOW TABLES;

SHOW TABLES LIKE 'pq_*';

SHOW VIEWS;

SHOW COLUMNS IN pq_sales;

SHOW COLUMNS FROM pq_people;

SHOW PARTITIONS pq_sales;

SHOW TBLPROPERTIES pq_sales ('purpose');

SHOW FUNCTIONS LIKE 'array_*';

SHOW USER FUNCTIONS;

SHOW CATALOGS;

SHOW CURRENT NAMESPACE;

SET spark.hudisql.corpus.flag = on;

SET spark.hudisql.corpus.flag;

RESET spark.hudisql.corpus.flag;

SET spark.sql.shuffle.partitions;

EXPLAIN SELECT 1 AS one;

EXPLAIN EXTENDED SELECT id FROM range(2);

ALTER TABLE pq_sales SET TBLPROPERTIES ('maintainer' = 'corpus; team');

ALTER TABLE pq_sales UNSET TBLPROPERTIES IF EXISTS ('nonexistent');

SHOW TBLPROPERTIES pq_sales ('maintainer');

ALTER TABLE pq_empty ADD COLUMNS (f BOOLEAN COMMENT 'added; later');

ALTER TABLE pq_empty ALTER COLUMN a COMMENT 'column a';

ALTER TABLE pq_people RENAME TO pq_staff;

SELECT count(*) FROM pq_staff;

ALTER TABLE pq_sales ADD PARTITION (day = '2024-02-01');

ALTER TABLE pq_sales DROP PARTITION (day = '2024-02-01');

ALTER VIEW pv_eng AS SELECT * FROM pq_staff WHERE dept = 'ops';

SELECT * FROM pv_eng ORDER BY id;

ALTER VIEW pv_eng SET TBLPROPERTIES ('note' = 'view');

CREATE OR REPLACE VIEW pv_totals (dept COMMENT 'department', total) AS
SELECT dept, count(*) AS n FROM pq_staff GROUP BY dept;

SELECT * FROM pv_totals ORDER BY dept;

CREATE TEMPORARY VIEW cv_once AS SELECT 'temporary' AS kind;

DROP VIEW cv_once;

CREATE GLOBAL TEMPORARY VIEW gv_corpus AS SELECT 1 AS x;

SELECT * FROM global_temp.gv_corpus;

DROP VIEW global_temp.gv_corpus;

CREATE OR REPLACE TEMPORARY FUNCTION corpus_plus1(x INT) RETURNS INT RETURN x + 1;

SELECT corpus_plus1(41);

DROP TEMPORARY FUNCTION corpus_plus1;

DECLARE OR REPLACE VARIABLE corpus_var INT DEFAULT 5;

SELECT corpus_var;

SET VAR corpus_var = corpus_var * 2;

SELECT corpus_var AS doubled;

DROP TEMPORARY VARIABLE corpus_var;

EXECUTE IMMEDIATE 'SELECT ''run; immediately'' AS s';

ANALYZE TABLE pq_sales COMPUTE STATISTICS;

ANALYZE TABLE pq_staff COMPUTE STATISTICS FOR COLUMNS id, dept;

CACHE TABLE pq_staff;

CACHE LAZY TABLE cached_people AS SELECT * FROM cv_people;

SELECT count(*) FROM cached_people;

UNCACHE TABLE IF EXISTS cached_people;

DROP VIEW IF EXISTS cached_people;

UNCACHE TABLE pq_staff;

CLEAR CACHE;

REFRESH TABLE pq_sales;

SELECT day, sum(qty * price) AS revenue FROM pq_sales GROUP BY day ORDER BY day;

SELECT item, qty FROM pq_sales WHERE day = '2024-01-02' ORDER BY id;

SELECT * FROM pq_sales WHERE item LIKE 'plum;%';

SELECT * FROM pq_hudi_words;

SELECT title FROM pq_ctas_join ORDER BY id;

SELECT * FROM pq_like;

SELECT * FROM pq_empty;

INSERT INTO pq_empty SELECT 1, 'b', array('x'), map('k', 1), named_struct('x', 1, 'y', 'y'), true;

SELECT a, b, c[0], d['k'], e.x, e.y, f FROM pq_empty;

INSERT INTO pq_sales PARTITION (day) SELECT 8, 'date', 1, 5.00, '2024-01-05';

INSERT OVERWRITE TABLE pq_sales PARTITION (day = '2024-01-05') VALUES (9, 'date', 2, 5.50);

SELECT id, item FROM pq_sales WHERE day = '2024-01-05';

SHOW PARTITIONS pq_sales PARTITION (day = '2024-01-05');

TRUNCATE TABLE pq_overwrite;

SELECT count(*) FROM pq_overwrite;

DROP TABLE pq_overwrite;

DROP TABLE IF EXISTS pq_never_created;

DROP TABLE IF EXISTS pq_like PURGE;

DROP VIEW IF EXISTS pv_totals;

SELECT * FROM cv_people WHERE name = 'WHEN MATCHED THEN DELETE';

SELECT 'ALTER TABLE t ADD COLUMNS (x INT); ALTER TABLE t RENAME TO u' AS alter_text;

SELECT count(*) AS `SHOW TIMELINE` FROM cv_people;

SELECT id AS timeline FROM cv_people WHERE id = 1;

SELECT 'END' AS last_statement -- no semicolon after this one, and a trailing comment
