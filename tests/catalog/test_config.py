"""load_catalog: by URL, by name from the config file, from the environment, or the default
SQLite file in the warehouse."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hudisql.catalog import load_catalog
from hudisql.catalog.config import parse_yaml_subset
from hudisql.errors import CatalogError


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HUDISQL_CONFIG", str(tmp_path / "absent.yaml"))
    monkeypatch.delenv("HUDISQL_CATALOG_URL", raising=False)


def test_default_is_a_sqlite_file_in_wal_mode_in_the_warehouse(tmp_path: Path) -> None:
    with load_catalog(warehouse=str(tmp_path / "wh"), poll_interval=0) as cat:
        cat.create_table("t")
        assert cat.default_location(cat.list_tables()[0]) == str(tmp_path / "wh" / "t")
    path = tmp_path / "wh" / "hudisql_catalog.db"
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT name FROM hudisql_tables").fetchall() == [("t",)]


def test_url_environment_and_named_catalogs(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "first.db", tmp_path / "second.db"
    with load_catalog(f"sqlite:///{first}", poll_interval=0) as cat:
        cat.create_table("in_first")
    monkeypatch.setenv("HUDISQL_CATALOG_URL", f"sqlite:///{first}")
    with load_catalog(poll_interval=0) as cat:
        assert [n.table for n in cat.list_tables()] == ["in_first"]
    config = tmp_path / "hudisql.yaml"
    config.write_text(f"""
# catalogs of this machine
catalog:
  default:
    uri: "sqlite:///{second}"   # the shared one
    warehouse: {tmp_path / "wh"}
  first:
    uri: 'sqlite:///{first}'
    poll_interval: 0
""")
    monkeypatch.setenv("HUDISQL_CONFIG", str(config))
    with load_catalog("first") as cat:
        assert cat.name == "first" and not cat.poller.running
        assert [n.table for n in cat.list_tables()] == ["in_first"]
    monkeypatch.delenv("HUDISQL_CATALOG_URL")
    with load_catalog(poll_interval=0) as cat:
        assert cat.uri == f"sqlite:///{second}" and cat.warehouse == str(tmp_path / "wh")
    with pytest.raises(CatalogError, match=r"catalog 'nope' is not defined in .*hudisql\.yaml"):
        load_catalog("nope")


def test_bad_urls_and_properties_are_refused(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="'mysql' is not supported"):
        load_catalog("mysql://u@h/db")
    with pytest.raises(CatalogError, match="not a number"):
        load_catalog(f"sqlite:///{tmp_path}/c.db", poll_interval="soon")
    with pytest.raises(CatalogError, match="not a boolean"):
        load_catalog(f"sqlite:///{tmp_path}/c.db", poll_interval=0, prewarm="maybe")


def test_yaml_subset() -> None:
    text = "a:\n  b: 1 # note\n  c:\n    d: 'x # not a comment'\ne: \"q\"\n"
    assert parse_yaml_subset(text) == {"a": {"b": "1", "c": {"d": "x # not a comment"}},
                                       "e": "q"}
    with pytest.raises(CatalogError, match="cfg, line 2: expected 'key: value'"):
        parse_yaml_subset("a:\n  just text\n", "cfg")


def test_a_config_file_of_the_wrong_shape_is_refused(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("catalog:\n  uri: sqlite:///x.db\n")
    monkeypatch.setenv("HUDISQL_CONFIG", str(config))
    with pytest.raises(CatalogError, match="must map catalog names"):
        load_catalog("x")
