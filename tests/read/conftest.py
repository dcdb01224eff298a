"""Fixtures of the read tests: a HudiSession over the shared SparkSession."""

from __future__ import annotations

import pytest

import hudisql
from hudisql.session import HudiSession


@pytest.fixture(scope="session")
def hudi_session(spark) -> HudiSession:  # type: ignore[no-untyped-def]
    """The shared SparkSession extended by hudisql (the ``hudi`` data source registered)."""
    session: HudiSession = hudisql.connect(spark)
    return session
