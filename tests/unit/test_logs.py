"""Logging: one JSON object per line, stdlib loggers included, secrets never rendered."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import datetime

import pytest
import structlog

from memoryd.logs import configure_logging, get_logger

FAKE_KEY = "sk-ant-api03-" + "A1b2C3d4" * 11 + "xyzAA"


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    buffer = io.StringIO()
    # Other tests (the daemon's) may have tuned a library logger's level; start from defaults.
    for name in ("apscheduler", "apscheduler.scheduler"):
        logging.getLogger(name).setLevel(logging.NOTSET)
    configure_logging("json", "debug", stream=buffer)
    yield buffer
    logging.getLogger().handlers.clear()
    structlog.reset_defaults()


def lines(buffer: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_every_line_has_event_level_timestamp(stream: io.StringIO) -> None:
    get_logger("memoryd.test").info("heartbeat.finished", facts_added=3)
    (line,) = lines(stream)
    assert line["event"] == "heartbeat.finished"
    assert line["level"] == "info"
    assert line["facts_added"] == 3
    assert line["logger"] == "memoryd.test"
    stamp = datetime.fromisoformat(str(line["timestamp"]).replace("Z", "+00:00"))
    assert stamp.utcoffset() is not None
    assert stamp.utcoffset().total_seconds() == 0  # type: ignore[union-attr]


def test_standard_library_loggers_come_out_as_json_too(stream: io.StringIO) -> None:
    logging.getLogger("apscheduler.scheduler").warning("Run time of job %s was missed", "hb")
    (line,) = lines(stream)
    assert line["event"] == "Run time of job hb was missed"
    assert line["level"] == "warning"
    assert line["logger"] == "apscheduler.scheduler"


def test_secret_named_values_and_secret_looking_strings_are_redacted(
    stream: io.StringIO,
) -> None:
    log = get_logger("memoryd.test")
    log.info("llm.configured", api_key=FAKE_KEY, input_tokens=12, note=f"key is {FAKE_KEY}")
    logging.getLogger("httpx2").warning("header Authorization: Bearer %s", FAKE_KEY)
    raw = stream.getvalue()
    assert FAKE_KEY not in raw
    first, second = lines(stream)
    assert first["api_key"] == "[REDACTED]"
    assert first["input_tokens"] == 12
    assert "[REDACTED:" in str(first["note"])
    assert "[REDACTED" in str(second["event"])


def explode() -> None:
    api_key = FAKE_KEY  # a local a traceback must not show
    raise RuntimeError("boom " + api_key[:3])


def test_exceptions_are_structured(stream: io.StringIO) -> None:
    try:
        explode()
    except RuntimeError:
        get_logger("memoryd.test").exception("job.failed")
    (line,) = lines(stream)
    assert line["event"] == "job.failed"
    assert "boom" in json.dumps(line["exception"])
    assert "explode" in json.dumps(line["exception"])
    assert FAKE_KEY not in stream.getvalue()
    assert "locals" not in json.dumps(line["exception"])


def test_levels_filter() -> None:
    buffer = io.StringIO()
    configure_logging("json", "warning", stream=buffer)
    try:
        get_logger("memoryd.test").info("quiet")
        get_logger("memoryd.test").warning("loud")
        assert [line["event"] for line in lines(buffer)] == ["loud"]
    finally:
        logging.getLogger().handlers.clear()
        structlog.reset_defaults()


def test_console_rendering_is_for_people() -> None:
    buffer = io.StringIO()
    configure_logging("console", "info", stream=buffer)
    try:
        get_logger("memoryd.test").info("hello", who="operator")
        text = buffer.getvalue()
        assert "hello" in text
        assert "operator" in text
        with pytest.raises(json.JSONDecodeError):
            json.loads(text.splitlines()[0])
    finally:
        logging.getLogger().handlers.clear()
        structlog.reset_defaults()
