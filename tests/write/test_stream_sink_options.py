"""The streaming sink's options that change how batches are written, without Spark: Hudi's
asynchronous compaction runs beside the batches (never inline in them), an explicit inline
choice wins, and a bad value is refused by name."""

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


@pytest.mark.parametrize(("options", "asynchronous"), [
    ({}, False), ({ASYNC_COMPACTION: "false"}, False), ({ASYNC_COMPACTION: "true"}, True),
    ({ASYNC_COMPACTION: "true", COMPACT_INLINE: "false"}, True),
    ({ASYNC_COMPACTION: "true", COMPACT_INLINE: "true"}, False)])
def test_async_compaction_never_compacts_inside_the_batch(
        options: dict[str, str], asynchronous: bool, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="hudisql.write.stream_sink"):
        sink = _sink(**options)
        request = sink._request(0)
    assert request.options.get(COMPACT_INLINE) == options.get(COMPACT_INLINE)
    assert (sink.compactor is not None) is asynchronous
    assert caplog.text == ""


def test_a_bad_async_compaction_value_is_refused_by_name() -> None:
    with pytest.raises(WriteError, match=f"{ASYNC_COMPACTION}='yes' is not true or false"):
        _sink(**{ASYNC_COMPACTION: "yes"})
