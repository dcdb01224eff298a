"""Tests of the SQL front end (hudisql.sql)."""
