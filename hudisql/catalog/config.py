"""``load_catalog``: find and open the catalog a session uses.

In order: an explicit URL (``sqlite:///...``, ``postgresql://...``); a catalog name looked
up in the config file; the ``HUDISQL_CATALOG_URL`` environment variable; the config file's
``default`` catalog; else a SQLite file in the warehouse. The config file is
``~/.hudisql.yaml`` (or ``HUDISQL_CONFIG``), in this YAML subset::

    catalog:
      default:
        uri: postgresql://hudi@db.example.com:5432/metastore
        warehouse: /data/warehouse
      local:
        uri: sqlite:////tmp/catalog.db
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hudisql.catalog.catalog import SqlCatalog
from hudisql.errors import CatalogError

ENV_URL = "HUDISQL_CATALOG_URL"
ENV_CONFIG = "HUDISQL_CONFIG"


def load_catalog(name_or_url: str | None = None, **properties: Any) -> SqlCatalog:
    """Open a catalog by URL, by name from the config file, or the default one.

    Keyword properties override the config file's (``warehouse``, ``poll_interval``, ...;
    see :class:`SqlCatalog`).

    Raises:
        CatalogError: a named catalog is not in the config file, or the file is malformed.
        CatalogUnavailableError: the catalog database cannot be reached.
    """
    if name_or_url and "://" in name_or_url:
        return SqlCatalog("default", **{**properties, "uri": name_or_url})
    catalogs = _config_catalogs()
    if name_or_url:
        if name_or_url not in catalogs:
            raise CatalogError(
                f"catalog {name_or_url!r} is not defined in {config_path()}; define it under "
                f"'catalog:' there, or pass a URL such as 'sqlite:///path/catalog.db'")
        return SqlCatalog(name_or_url, **{**catalogs[name_or_url], **properties})
    env_url = os.environ.get(ENV_URL)
    if env_url and "uri" not in properties:
        return SqlCatalog("default", **{**properties, "uri": env_url})
    return SqlCatalog("default", **{**catalogs.get("default", {}), **properties})


def config_path() -> Path:
    """The config file's path: ``$HUDISQL_CONFIG`` or ``~/.hudisql.yaml``."""
    return Path(os.environ.get(ENV_CONFIG) or Path.home() / ".hudisql.yaml")


def _config_catalogs() -> dict[str, dict[str, str]]:
    path = config_path()
    if not path.is_file():
        return {}
    tree = parse_yaml_subset(path.read_text(encoding="utf-8"), str(path))
    section = tree.get("catalog", {})
    if not isinstance(section, dict) or not all(isinstance(v, dict) for v in section.values()):
        raise CatalogError(
            f"{path}: 'catalog' must map catalog names to their properties (uri, warehouse...)")
    return {name: {k: str(v) for k, v in props.items()} for name, props in section.items()}


def parse_yaml_subset(text: str, source: str = "<config>") -> dict[str, Any]:
    """Parse nested ``key: value`` mappings by indentation, with ``#`` comments and quotes.

    Raises:
        CatalogError: a line is not ``key: value`` or ``key:``, or indentation is inconsistent;
            the message names the line.
    """
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if "\t" in line[:indent + 1]:
            raise CatalogError(f"{source}, line {number}: indent with spaces, not tabs")
        key, sep, value = line.strip().partition(":")
        if not sep or not key:
            raise CatalogError(f"{source}, line {number}: expected 'key: value', got {raw!r}")
        while indent <= stack[-1][0]:
            stack.pop()
        parent = stack[-1][1]
        key = _unquote(key.strip())
        value = value.strip()
        if value:
            parent[key] = _unquote(value)
        else:
            child: dict[str, Any] = {}
            parent[key] = child
            stack.append((indent, child))
    return root


def _strip_comment(line: str) -> str:
    quote = ""
    for i, c in enumerate(line):
        if c in "'\"" and (not quote or quote == c):
            quote = "" if quote else c
        elif c == "#" and not quote and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
