-- What DBeaver (pgjdbc inside) sends when it connects and opens a database's navigator.
-- Source: the statements DBeaver 25.1 sent to a PostgreSQL-protocol server, as recorded in
-- datafusion-contrib/datafusion-postgres tests/dbeaver.rs (typos of that record fixed), and
-- DBeaver's PostgreSQL plugin (dbeaver/dbeaver, plugins/org.jkiss.dbeaver.ext.postgresql,
-- PostgreDatabase / PostgreSchema / PostgreTableBase metadata reads).
-- One statement per block; blocks end with a line holding only ";".
SET extra_float_digits = 3
;
SET application_name = 'PostgreSQL JDBC Driver'
;
SET application_name = 'DBeaver 25.1.5 - Main <hudisql>'
;
SELECT current_schema(),session_user
;
SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass ORDER BY nspname
;
SELECT n.nspname = ANY(current_schemas(true)), n.nspname, t.typname FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid WHERE t.oid = 1007
;
SHOW search_path
;
SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datname='hudisql'
;
SELECT * FROM pg_catalog.pg_settings where name='standard_conforming_strings'
;
SELECT version()
;
SELECT * FROM pg_catalog.pg_enum WHERE 1<>1 LIMIT 1
;
SELECT reltype FROM pg_catalog.pg_class WHERE 1<>1 LIMIT 1
;
SELECT t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name, d.description FROM pg_catalog.pg_type t LEFT OUTER JOIN pg_catalog.pg_type et ON et.oid=t.typelem LEFT OUTER JOIN pg_catalog.pg_class c ON c.oid=t.typrelid LEFT OUTER JOIN pg_catalog.pg_description d ON t.oid=d.objoid WHERE t.typname IS NOT NULL AND (c.relkind IS NULL OR c.relkind = 'c') AND (et.typcategory IS NULL OR et.typcategory <> 'C')
;
SELECT c.oid,c.*,d.description,pg_catalog.pg_get_expr(c.relpartbound, c.oid) as partition_expr, pg_catalog.pg_get_partkeydef(c.oid) as partition_key FROM pg_catalog.pg_class c LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_class'::regclass WHERE c.relnamespace=1814605023 AND c.relkind not in ('i','I','c')
;
SELECT c.relname,a.*,pg_catalog.pg_get_expr(ad.adbin, ad.adrelid, true) as def_value,dsc.description,dep.objid FROM pg_catalog.pg_attribute a INNER JOIN pg_catalog.pg_class c ON (a.attrelid=c.oid) LEFT OUTER JOIN pg_catalog.pg_attrdef ad ON (a.attrelid=ad.adrelid AND a.attnum = ad.adnum) LEFT OUTER JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid) LEFT OUTER JOIN pg_depend dep on dep.refobjid = a.attrelid AND dep.deptype = 'i' and dep.refobjsubid = a.attnum and dep.classid = dep.refclassid WHERE NOT a.attisdropped AND c.relkind not in ('i','I','c') AND c.relnamespace=1814605023 ORDER BY a.attnum
;
SELECT c.oid,c.relname,c.relnamespace,c.relkind,ind.*,pg_catalog.pg_get_expr(ind.indpred, ind.indrelid) as pred_expr FROM pg_catalog.pg_index ind, pg_catalog.pg_class c WHERE c.oid=ind.indexrelid AND ind.indrelid=1196968694
;
SELECT c.oid,c.*,t.relname as tabrelname,rt.relnamespace as refnamespace,d.description, case when c.contype='c' then pg_catalog.pg_get_constraintdef(c.oid) else null end consrc_copy FROM pg_catalog.pg_constraint c INNER JOIN pg_catalog.pg_class t ON t.oid=c.conrelid LEFT OUTER JOIN pg_catalog.pg_class rt ON rt.oid=c.confrelid LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_constraint'::regclass WHERE t.relnamespace=1814605023 ORDER BY c.oid
;
