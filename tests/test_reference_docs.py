"""docs/REFERENCE.md is complete and its examples are real.

Every statement in the parser's table (``HudiParser.STATEMENTS``), every ``CALL`` procedure
(``PROCEDURES``), every error class of ``hudisql.errors`` and every configuration key the
code names (a ``"hoodie.*"`` or ``"hudisql.*"`` string in ``hudisql/``) must have its entry,
so a statement, option or error added later fails here until it is documented. Every SQL
example is parsed by hudisql's parser and must be the statement its entry is about.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hudisql import errors
from hudisql.errors import HudiSqlError, SqlParseError
from hudisql.parser import PROCEDURES, HudiParser, parse_script
from hudisql.parser.dialect import Hudi
from hudisql.parser.script import split_tokens
from hudisql.parser.tokens import tokenize

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "docs" / "REFERENCE.md"
#: A configuration key as the code spells it.
KEY = re.compile(r"^(hoodie|hudisql)(\.[A-Za-z0-9_]+)+$")
#: Strings that look like keys but are not (each with why).
NOT_KEYS = {
    "hoodie.properties": "the table config file's name",
    "hoodie.properties.backup": "a file name under .hoodie",
}
#: A row of a Markdown table whose first cell is a `code` name.
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|(.*)\|\s*$")
STATEMENTS_CHAPTER, PROCEDURES_CHAPTER = "Statements", "Procedures"
CONFIG_CHAPTER, ERRORS_CHAPTER = "Configuration", "Errors"
REFUSED = "This statement is refused"
_DIALECT = Hudi()

Key = tuple[str, ...]


@dataclass(frozen=True)
class Section:
    """One ``###`` entry of the reference: its chapter (``##``), title and text."""

    chapter: str
    title: str
    body: str

    def blocks(self, language: str) -> list[str]:
        """The fenced code blocks of ``language`` in this entry."""
        return re.findall(rf"^```{language}\n(.*?)^```", self.body, re.M | re.S)

    def covers(self, key: Key) -> bool:
        """Whether one of the title's forms (split by `` / ``) starts with ``key``'s words."""
        return any(tuple(form.upper().split()[: len(key)]) == key
                   for form in self.title.split(" / "))


def sections(text: str) -> list[Section]:
    """The ``###`` entries of a reference text, in order (headings in code blocks ignored)."""
    found: list[Section] = []
    chapter, title, lines, fenced = "", None, [], False

    def close() -> None:
        if title is not None:
            found.append(Section(chapter, title, "\n".join(lines) + "\n"))

    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith(("## ", "### ")):
            close()
            title, lines = None, []
            if line.startswith("## "):
                chapter = line[3:].strip()
            else:
                title = line[4:].strip()
            continue
        lines.append(line)
    close()
    return found


def in_chapter(entries: list[Section], chapter: str) -> list[Section]:
    """The entries of one chapter."""
    return [s for s in entries if s.chapter == chapter]


def split_statements(sql: str) -> Iterator[tuple[str, Key | None]]:
    """Each statement of ``sql`` with the parser's key for it (None: it passes to Spark)."""
    tokens = tokenize(Hudi.tokenizer_class(dialect=_DIALECT), sql)
    for start, end, segment in split_tokens(sql, tokens):
        match = HudiParser.match_statement(segment)
        yield sql[start:end], match[0] if match else None


def statement_problems(entries: list[Section]) -> list[str]:
    """What the reference lacks for the parser's statements (empty when complete)."""
    problems = []
    chapter = in_chapter(entries, STATEMENTS_CHAPTER)
    for key in HudiParser.STATEMENTS:
        words = " ".join(key)
        entry = next((s for s in chapter if s.covers(key)), None)
        if entry is None:
            problems.append(f"statement {words}: no '### {words}' entry under '## Statements'")
            continue
        if not entry.blocks("text"):
            problems.append(f"statement {words}: no ```text grammar block in its entry")
        examples = [(text, k) for block in entry.blocks("sql") for text, k in
                    split_statements(block) if k == key]
        if not examples:
            problems.append(f"statement {words}: no ```sql example of it in its entry")
        for text, _ in examples:
            problems.extend(example_problems(text, refused=REFUSED in entry.body))
    return problems


def example_problems(text: str, refused: bool) -> list[str]:
    """Why one example statement is wrong: it must parse to a command (or be refused)."""
    try:
        (statement,) = parse_script(text)
    except SqlParseError as exc:
        return [] if refused else [f"example {text!r} does not parse: {exc}"]
    if refused:
        return [f"example {text!r} of a refused statement parses"]
    if statement.command is None:
        return [f"example {text!r} is not a hudisql statement (it passes to Spark)"]
    return []


def procedure_problems(entries: list[Section]) -> list[str]:
    """What the reference lacks for the CALL procedures (empty when complete)."""
    problems = []
    chapter = {s.title: s for s in in_chapter(entries, PROCEDURES_CHAPTER)}
    for name, procedure in PROCEDURES.items():
        entry = chapter.get(f"CALL {name}")
        if entry is None:
            problems.append(f"procedure {name}: no '### CALL {name}' entry under '## Procedures'")
            continue
        # | parameter | type | default | meaning |
        rows = {name: cells[1] for name, cells in table_rows(entry.body) if len(cells) > 1}
        for param in procedure.parameters:
            default = rows.get(param.name)
            if default is None:
                problems.append(f"procedure {name}: parameter {param.name} has no table row")
            elif param.required and default != "required":
                problems.append(f"procedure {name}: {param.name} is required; say so")
            elif param.default is not None and str(param.default) not in default:
                problems.append(f"procedure {name}: {param.name}'s default is {param.default}")
        call = re.compile(rf"^CALL\s+(system\.)?{re.escape(name)}\s*\(", re.I)
        examples = [text for block in entry.blocks("sql")
                    for text, _ in split_statements(block) if call.match(text)]
        if not examples:
            problems.append(f"procedure {name}: no ```sql example calling it in its entry")
        for text in examples:
            problems.extend(example_problems(text, refused=False))
    return problems


def table_rows(text: str) -> Iterator[tuple[str, list[str]]]:
    """(name, the other cells) of every Markdown table row that starts with a `code` name."""
    for line in text.splitlines():
        match = ROW.match(line)
        if match:
            yield match.group(1), [c.strip() for c in re.split(r"(?<!\\)\|", match.group(2))]


def error_problems(entries: list[Section]) -> list[str]:
    """What the reference lacks (or has too much of) for the error classes."""
    classes = {name for name, obj in vars(errors).items()
               if isinstance(obj, type) and issubclass(obj, HudiSqlError)}
    chapter = {s.title: s for s in in_chapter(entries, ERRORS_CHAPTER)}
    problems = [f"error {name}: no '### {name}' entry under '## Errors'"
                for name in sorted(classes - chapter.keys())]
    problems += [f"error {name}: documented but hudisql.errors has no such class"
                 for name in sorted(chapter.keys() - classes)]
    problems += [f"error {name}: its entry does not say what to do ('What to do: ...')"
                 for name, entry in sorted(chapter.items())
                 if name in classes and "What to do" not in " ".join(entry.body.split())]
    return problems


def configuration_keys() -> dict[str, str]:
    """Every configuration key named in ``hudisql/`` -> the first file naming it."""
    keys: dict[str, str] = {}
    for path in sorted((REPO / "hudisql").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and KEY.match(node.value) and node.value not in NOT_KEYS
                    and not is_module(node.value)):
                keys.setdefault(node.value, str(path.relative_to(REPO)))
    return keys


def is_module(name: str) -> bool:
    """Whether ``name`` names a module of this repository (``"hudisql.demo"``) or a class or
    function in one (``"hudisql.txn.lock.FileLockProvider"``, a lock provider's dotted path),
    not a key."""
    parts = name.split(".")
    path = REPO.joinpath(*parts)
    if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
        return True
    module = REPO.joinpath(*parts[:-1])
    source = module.with_suffix(".py") if module.with_suffix(".py").is_file() else (
        module / "__init__.py")
    defines = re.compile(rf"^(class |def ){re.escape(parts[-1])}\b", re.M)
    return source.is_file() and defines.search(source.read_text()) is not None


def configuration_problems(entries: list[Section], keys: dict[str, str]) -> list[str]:
    """Keys the code reads without a row (key, default, meaning), and rows of no key."""
    rows: dict[str, str] = {}  # | key | default | meaning |
    for entry in in_chapter(entries, CONFIG_CHAPTER):
        rows.update((key, cells[0]) for key, cells in table_rows(entry.body))
    problems = [f"configuration key {key} (named in {where}): no row '| `{key}` | <default> | "
                "<meaning> |' under '## Configuration'"
                for key, where in sorted(keys.items()) if key not in rows]
    problems += [f"configuration key {key}: its row gives no default"
                 for key, default in sorted(rows.items()) if key in keys and not default]
    problems += [f"configuration key {key}: documented but named nowhere in hudisql/"
                 for key in sorted(rows) if KEY.match(key) and key not in keys]
    return problems


@pytest.fixture(scope="module")
def entries() -> list[Section]:
    return sections(REFERENCE.read_text())


def test_every_statement_has_a_grammar_and_an_example_that_parses(
        entries: list[Section]) -> None:
    assert statement_problems(entries) == []


def test_every_procedure_has_its_parameters_defaults_and_an_example(
        entries: list[Section]) -> None:
    assert procedure_problems(entries) == []


def test_every_error_class_has_an_entry_saying_what_to_do(entries: list[Section]) -> None:
    assert error_problems(entries) == []


def test_every_configuration_key_has_a_row_with_its_default(entries: list[Section]) -> None:
    keys = configuration_keys()
    # The scan finds keys wherever the code names them: constants and inline literals.
    assert {"hoodie.write.lock.provider", "hudisql.read.partition.pruning",
            "hudisql.log.level"} <= keys.keys()
    assert "hudisql.demo" not in keys and "hoodie.properties.backup" not in keys
    assert "hudisql.txn.lock.FileLockProvider" not in keys
    assert configuration_problems(entries, keys) == []


def test_every_sql_example_parses(entries: list[Section]) -> None:
    problems = []
    for entry in in_chapter(entries, STATEMENTS_CHAPTER) + in_chapter(entries,
                                                                       PROCEDURES_CHAPTER):
        for block in entry.blocks("sql"):
            for text, key in split_statements(block):
                refused = REFUSED in entry.body and key is not None and entry.covers(key)
                problems += example_problems(text, refused)
    assert problems == []


def test_the_checks_find_what_is_missing(entries: list[Section]) -> None:
    """Each check fails on a reference with an entry, row or example taken out."""
    text = REFERENCE.read_text()
    without = sections(re.sub(r"^### DROP TABLE\n.*?(?=^### )", "", text, flags=re.M | re.S))
    assert statement_problems(without) == [
        "statement DROP TABLE: no '### DROP TABLE' entry under '## Statements'"]
    broken = sections(text.replace("DROP TABLE IF EXISTS trips_backup PURGE;",
                                   "DROP TABLE IF EXISTS trips_backup PURGE AGAIN;"))
    (problem,) = statement_problems(broken)
    assert problem.startswith("example 'DROP TABLE IF EXISTS trips_backup PURGE AGAIN' does not "
                              "parse: ")
    no_limit = sections(text.replace("| `limit` | number | 10 |", "| `limit` | number | 5 |"))
    assert procedure_problems(no_limit) == ["procedure show_commits: limit's default is 10",
                                            "procedure show_archived_commits: limit's default "
                                            "is 10"]
    no_error = sections(text.replace("### LockError", "### LockTrouble"))
    assert error_problems(no_error) == [
        "error LockError: no '### LockError' entry under '## Errors'",
        "error LockTrouble: documented but hudisql.errors has no such class"]
    keys = {**configuration_keys(), "hudisql.not.documented": "hudisql/x.py"}
    assert configuration_problems(entries, keys) == [
        "configuration key hudisql.not.documented (named in hudisql/x.py): no row "
        "'| `hudisql.not.documented` | <default> | <meaning> |' under '## Configuration'"]
