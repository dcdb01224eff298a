"""The repository stands alone: what its code and docs cite, it holds.

A clone has no ``../shared`` folder beside it (``.ci/run`` tests in such a clone), so nothing
may point there; every relative link of the Markdown docs must lead to a file (and heading)
of the repository, and every repository path the docs or docstrings name must exist.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Where code and prose live (data files are not read).
SOURCES = ("hudisql", "tests", "benchmarks", "docs", "scripts", "notebooks", ".ci")
TEXT_SUFFIXES = {".py", ".md", ".txt", ".toml", ".sh", ".ipynb", ""}
#: ``../shared/...`` or ``shared/design|seeds|fixtures``: the folder beside the old checkout.
OUTSIDE = re.compile(r"\.\./shared\b|(?<![\w.-])shared/(design|seeds|fixtures|hooks)\b")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
#: A repository path in backquotes: ``hudisql/...``, ``docs/...``, ``tests/...``.
PATH = re.compile(r"`((?:hudisql|tests|docs|benchmarks|scripts|notebooks)/[\w./-]*[\w/])`")
DOCS_MENTION = re.compile(r"\bdocs/[A-Z_]+\.md\b")
#: Files the docs already name that work in progress on other branches adds (each with
#: who adds it); the checks below skip them only while they are absent.
def text_files() -> Iterator[Path]:
    """The repository's code and prose files (the README, dev and .ci/run included)."""
    yield REPO / "README.md"
    yield REPO / "dev"
    for top in SOURCES:
        root = REPO / top
        if not root.exists():
            continue
        for path in sorted(root.rglob("*")):
            if (path.is_file() and path.suffix in TEXT_SUFFIXES and ".venv" not in path.parts
                    and "__pycache__" not in path.parts and "data" not in path.parts):
                yield path


def markdown_files() -> list[Path]:
    """The Markdown docs: the README, ``docs/`` and the fixtures' README."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
            REPO / "tests" / "data" / "hudi" / "README.md"]


def slug(heading: str) -> str:
    """The anchor a Markdown renderer (GitHub's) gives a heading."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The heading anchors of a Markdown file (headings in code blocks left out)."""
    found, fenced = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            found.add(slug(line.lstrip("#")))
    return found


def test_nothing_points_outside_the_repository() -> None:
    hits = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
            for path in text_files() if path != Path(__file__).resolve()
            for number, line in enumerate(path.read_text().splitlines(), start=1)
            if OUTSIDE.search(line)]
    assert hits == []


def test_relative_links_of_the_docs_lead_to_files_and_headings() -> None:
    broken = []
    for doc in markdown_files():
        for target in LINK.findall(doc.read_text()):
            if re.match(r"^[a-z]+:", target):
                continue  # http(s), mailto: outside links are allowed
            file_part, _, anchor = target.partition("#")
            linked = (doc.parent / file_part).resolve() if file_part else doc
            where = f"{doc.relative_to(REPO)} -> {target}"
            if not linked.exists():
                broken.append(f"{where}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{where}: no such heading")
    assert broken == []


def test_repository_paths_named_in_docs_and_docstrings_exist() -> None:
    missing = set()
    for doc in markdown_files():
        for name in PATH.findall(doc.read_text()):
            if not (REPO / name).exists():
                missing.add(f"{doc.relative_to(REPO)}: {name}")
    for path in text_files():
        if path.suffix == ".py":
            for name in DOCS_MENTION.findall(path.read_text()):
                if not (REPO / name).exists():
                    missing.add(f"{path.relative_to(REPO)}: {name}")
    assert sorted(missing) == []


def test_the_checks_see_an_outside_path_and_a_broken_link() -> None:
    assert OUTSIDE.search("see ../shared/design/FORMAT.md")
    assert OUTSIDE.search("(schema in `shared/fixtures/hudi/x.avsc`)")
    assert not OUTSIDE.search("the shared one") and not OUTSIDE.search("docs/shared/x")
    assert slug(" 6. Log files and log blocks") == "6-log-files-and-log-blocks"
    assert slug("Table properties (`hoodie.properties`)") == "table-properties-hoodieproperties"
    assert LINK.findall("see [FORMAT.md](FORMAT.md#1-a-table) and [x](https://a.b)") == [
        "FORMAT.md#1-a-table", "https://a.b"]
