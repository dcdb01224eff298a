"""The ``hudi`` sqlglot dialect: Spark's, with hudisql's tokenizer and statements.

Defining the class registers it with sqlglot under the name ``hudi``.
"""

from __future__ import annotations

from sqlglot.dialects.spark import Spark

from hudisql.parser.parser import HudiParser
from hudisql.parser.tokens import HudiTokenizer


class Hudi(Spark):
    """Spark SQL plus hudisql's statements (see :mod:`hudisql.parser.statements`)."""

    Tokenizer = HudiTokenizer
    Parser = HudiParser
