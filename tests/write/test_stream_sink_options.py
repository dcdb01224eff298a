"""The streaming sink's options that change how batches are written, without Spark:
Hudi's asynchronous compaction becomes inline compaction after the batch that makes it
due, said in a warning, never silently dropped."""

from __future__ import annotations

import logging

import pytest

from hudisql.errors import WriteError
from hudisql.write.stream_sink import (
    ASYNC_COMPACTION,
    COMPACT_INLINE,
    HudiStreamSink,
    StreamTarget,
)


def _sink(**options: str) -> HudiStreamSink:
    target = StreamTarget("/t", None, {"hoodie.table.name": "t", **options})
    return HudiStreamSink("/t", target, lambda spark, spec: lambda s, p: None, None)


def test_async_compaction_is_carried_out_inline_and_said(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="hudisql.write.stream_sink"):
        sink = _sink(**{ASYNC_COMPACTION: "true"})
    assert sink._request(3).options[COMPACT_INLINE] == "true"
    assert "no asynchronous compaction" in caplog.text and "/t" in caplog.text


@pytest.mark.parametrize("options", [{}, {ASYNC_COMPACTION: "false"},
                                     {ASYNC_COMPACTION: "true", COMPACT_INLINE: "false"}])
def test_without_async_compaction_or_with_an_inline_choice_nothing_changes(
        options: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="hudisql.write.stream_sink"):
        request = _sink(**options)._request(0)
    assert request.options.get(COMPACT_INLINE) == options.get(COMPACT_INLINE)
    assert caplog.text == ""


def test_a_bad_async_compaction_value_is_refused_by_name() -> None:
    with pytest.raises(WriteError, match=f"{ASYNC_COMPACTION}='yes' is not true or false"):
        _sink(**{ASYNC_COMPACTION: "yes"})
