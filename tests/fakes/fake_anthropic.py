"""A fake Anthropic Messages API: a real local HTTP server the real SDK can talk to.

It speaks just enough of the API for memoryd: ``POST /v1/messages``, ``POST
/v1/messages/count_tokens`` (four characters a token, Haiku 5.5 30% denser; answered 404 as by a
server without the route when ``count_tokens_available`` is False), ``POST
/v1/messages/batches``, ``GET /v1/messages/batches/{id}`` and the results JSONL at the batch's
``results_url``. It listens on 127.0.0.1 on a free port, in a background thread.

Scripting (the answer types live in `tests.fakes.anthropic_wire` and are re-exported here).
Each request that needs a model answer (a message, or one request inside a batch)
takes the next answer from a queue; when the queue is empty, ``handler(request)`` computes one
(an exception it raises is kept in ``handler_errors`` and answered with a 500 not to retry);
without a handler, ``default`` is repeated; with none of these the server answers 400, so an
unscripted call is loud. Answers are ``ToolUse`` (a ``tool_use`` block with the given input, for
the tool the request forced unless named), ``Text`` (no tool call) and ``Error`` (an HTTP error
shaped like the real API's ``{"type": "error", "error": {...}}``, with extra headers such as
``retry-after``). Any answer may carry ``delay_seconds`` to provoke client timeouts. The real
API's answers to the errors memoryd handles are built by ``invalid_key()``,
``permission_denied()``, ``model_not_found(model)``, ``credit_too_low()``,
``request_too_large()``, ``prompt_too_long()`` and ``forced_tool_refused()``. Every error
carries a ``request-id`` header and the same id in its body.
``fail_next(*errors)`` makes the next HTTP requests on *any* endpoint fail (batch endpoints
included) before the queue is consulted; ``cut_results_streams=N`` breaks the first N batch
results downloads halfway, as a dropped connection would. ``latency_seconds`` delays every
message answer (a slow model, for benchmarks). ``requests_per_window=N`` (with
``window_seconds``) limits messages the way the real API does: every message answer carries
``anthropic-ratelimit-requests-limit``, ``-remaining`` and ``-reset`` (RFC 3339), and a message
past the limit gets a 429 ``rate_limit_error`` with ``retry-after`` (whole seconds until the
window ends) and the same headers. ``message_headers`` adds headers to every successful message
answer. With ``api_key`` set, a request with
another key gets the real 401; with ``models`` set, a message (or batch request) naming any
other model gets the real 404 ``model: <name>``. A request forcing a tool (``tool_choice``
``tool`` or ``any``) for a model named in ``refusing_forced_tool`` (by prefix; by default the
models the real API refuses it for, ``MODELS_REFUSING_FORCED_TOOL``) gets the real 400
``invalid_request_error``, before any scripted answer is taken. The key and the models can be
changed while the server runs, to "fix" them in the middle of a test. Every HTTP request is recorded
(method, path, lower-cased headers, JSON body) in ``requests``.

In a test::

    with FakeAnthropicServer([Error(529, "overloaded_error"), ToolUse({"facts": []})]) as server:
        client = AnthropicClient(api_key="test", base_url=server.base_url, sleep=waits.append)
        ...
        assert len(server.message_requests) == 2

Lifecycle. Use it as a context manager (``with FakeAnthropicServer() as server:``); ``stop()``
wakes delayed answers, shuts the server down and joins every thread, so no thread or socket
outlives it.

Standalone, for subprocess tests (run from the repository root)::

    python -m tests.fakes.fake_anthropic --port-file PORT_FILE [--script SCRIPT.json]
        [--record REQUESTS.jsonl] [--api-key KEY]

The port is written to PORT_FILE atomically once the server listens; the server runs until
SIGTERM or SIGINT. SCRIPT.json is ``{"answers": [...], "default": ANSWER, "usage": USAGE,
"batch_polls_before_end": N}`` where an ANSWER is ``{"kind": "tool_use", "input": {...}}``,
``{"kind": "text", "text": "..."}`` or ``{"kind": "error", "status": 429, "type":
"rate_limit_error", "message": "...", "headers": {...}, "error_code": "..."}``, each optionally
with ``"delay_seconds"`` and ``"usage"``; USAGE has the API's four token counts. With
``--record``, each request is appended to REQUESTS.jsonl as it arrives.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from tests.fakes.anthropic_wire import (
    MODELS_REFUSING_FORCED_TOOL,
    Answer,
    Error,
    FakeUsage,
    Handler,
    RecordedRequest,
    Text,
    ToolUse,
    answer_from_json,
    batch_json,
    count_input_tokens,
    credit_too_low,
    error_body,
    forced_tool_refused,
    forces_a_tool,
    invalid_key,
    invalid_message_params,
    message_json,
    model_not_found,
    permission_denied,
    prompt_too_long,
    request_too_large,
)

__all__ = [
    "MODELS_REFUSING_FORCED_TOOL",
    "Answer",
    "Error",
    "FakeAnthropicServer",
    "FakeUsage",
    "Handler",
    "RecordedRequest",
    "Text",
    "ToolUse",
    "answer_from_json",
    "credit_too_low",
    "forced_tool_refused",
    "invalid_key",
    "main",
    "model_not_found",
    "permission_denied",
    "prompt_too_long",
    "request_too_large",
    "server_from_script",
]


@dataclass
class _Batch:
    lines: list[str]
    succeeded: int
    polls: int = 0


@dataclass(frozen=True)
class _Response:
    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_seconds: float = 0.0
    # Announce the whole body but send half and hang up, as a dropped connection would.
    cut_short: bool = False


class FakeAnthropicServer:
    """The fake API; see the module docstring for scripting and lifecycle."""

    def __init__(
        self,
        answers: Iterable[Answer] = (),
        *,
        handler: Handler | None = None,
        default: Answer | None = None,
        usage: FakeUsage | None = None,
        api_key: str | None = None,
        models: Iterable[str] | None = None,
        batch_polls_before_end: int = 0,
        cut_results_streams: int = 0,
        record_path: Path | None = None,
        latency_seconds: float = 0.0,
        requests_per_window: int | None = None,
        window_seconds: float = 60.0,
        message_headers: Mapping[str, str] | None = None,
        refusing_forced_tool: Iterable[str] = MODELS_REFUSING_FORCED_TOOL,
        count_tokens_available: bool = True,
    ) -> None:
        self.count_tokens_available = count_tokens_available
        self.refusing_forced_tool = frozenset(refusing_forced_tool)
        self.latency_seconds = latency_seconds
        self._requests_per_window = requests_per_window
        self._window_seconds = window_seconds
        self._window: tuple[float, int] = (0.0, 0)  # (start, messages counted in it)
        self.message_headers = dict(message_headers or {})
        self.rate_limited = 0  # messages answered with a 429 by the window limit
        self._answers: deque[Answer] = deque(answers)
        self._failures: deque[Error] = deque()
        self._handler = handler
        self._default = default
        self._usage = usage or FakeUsage()
        self.api_key = api_key
        self.models: frozenset[str] | None = None if models is None else frozenset(models)
        self._batch_polls_before_end = batch_polls_before_end
        self._cut_results_streams = cut_results_streams
        self._record_path = record_path
        self._requests: list[RecordedRequest] = []
        self._written: list[float] = []  # when each answer's last byte was written (monotonic)
        self._handler_errors: list[Exception] = []
        self._batches: dict[str, _Batch] = {}
        self._counter = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeAnthropicServer:
        if self._server is not None:
            raise RuntimeError("the fake server is already running")
        self._stopping.clear()
        self._server = _Server(("127.0.0.1", 0), _RequestHandler, self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()  # wakes answers that are sleeping out a delay
        self._server.shutdown()
        self._server.server_close()  # joins the request threads
        if self._thread is not None:
            self._thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeAnthropicServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the fake server is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- scripting and inspection ------------------------------------------------------------

    def enqueue(self, *answers: Answer) -> None:
        with self._lock:
            self._answers.extend(answers)

    def fail_next(self, *errors: Error) -> None:
        with self._lock:
            self._failures.extend(errors)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def written(self) -> list[float]:
        """When each answer (of any request) was written whole to its socket, in order, on the
        `time.monotonic` clock: what a client can have received by a given instant."""
        with self._lock:
            return list(self._written)

    @property
    def message_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST" and r.path == "/v1/messages"]

    @property
    def handler_errors(self) -> list[Exception]:
        """Exceptions the handler raised; each was answered with a 500 that is not retried."""
        with self._lock:
            return list(self._handler_errors)

    @property
    def pending_answers(self) -> int:
        with self._lock:
            return len(self._answers)

    # -- serving (called on request threads) -------------------------------------------------

    def _serve(
        self, method: str, raw_path: str, headers: Mapping[str, str], raw: bytes
    ) -> _Response:
        path = raw_path.split("?", 1)[0]
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        recorded = RecordedRequest(method, path, headers, body)
        with self._lock:
            self._requests.append(recorded)
            self._record(recorded)
            failure = self._failures.popleft() if self._failures else None
        if failure is not None:
            return self._error(failure)
        if self.api_key is not None and recorded.api_key != self.api_key:
            return self._error(invalid_key())
        return self._route(recorded)

    def _route(self, recorded: RecordedRequest) -> _Response:
        method, path = recorded.method, recorded.path
        parts = [part for part in path.split("/") if part]
        if method == "POST" and parts == ["v1", "messages"]:
            return self._message(recorded)
        if method == "POST" and parts == ["v1", "messages", "count_tokens"]:
            if self.count_tokens_available:
                return self._count_tokens(recorded)
        elif method == "POST" and parts == ["v1", "messages", "batches"]:
            return self._create_batch(recorded)
        if method == "GET" and parts[:3] == ["v1", "messages", "batches"] and len(parts) == 4:
            return self._retrieve_batch(parts[3])
        if method == "GET" and len(parts) == 5 and parts[4] == "results":
            return self._batch_results(parts[3])
        return self._error(Error(404, "not_found_error", f"no route for {method} {path}"))

    def _record(self, recorded: RecordedRequest) -> None:
        if self._record_path is not None:
            with self._record_path.open("a", encoding="utf-8") as stream:
                stream.write(json.dumps(asdict(recorded), sort_keys=True) + "\n")

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            self._counter += 1
            return f"{prefix}_fake_{self._counter:04d}"

    def _next_answer(self, request: RecordedRequest) -> Answer:
        with self._lock:
            if self._answers:
                return self._answers.popleft()
        if self._handler is not None:
            try:
                return self._handler(request)
            except Exception as error:  # noqa: BLE001 - a test's handler bug must reach the test
                with self._lock:
                    self._handler_errors.append(error)
                # Not retried, so the client fails at once and the test can look here.
                return Error(
                    500, "api_error", f"fake handler raised {error!r}", {"x-should-retry": "false"}
                )
        if self._default is not None:
            return self._default
        return Error(400, "invalid_request_error", "fake server: no answer was scripted")

    def _unknown_model(self, params: Mapping[str, Any]) -> Error | None:
        models = self.models
        model = str(params.get("model"))
        return None if models is None or model in models else model_not_found(model)

    def _refused_choice(self, params: Mapping[str, Any]) -> Error | None:
        model = str(params.get("model"))
        refuses = any(model.startswith(prefix) for prefix in self.refusing_forced_tool)
        return forced_tool_refused() if refuses and forces_a_tool(params) else None

    def _message(self, request: RecordedRequest) -> _Response:
        problem = invalid_message_params(request.body)
        if problem:
            return self._error(Error(400, "invalid_request_error", problem))
        unknown = self._unknown_model(request.body) or self._refused_choice(request.body)
        if unknown is not None:
            return self._error(unknown)
        limits, refused = self._rate_limit()
        if refused is not None:
            return self._error(refused)
        answer = self._next_answer(request)
        if isinstance(answer, Error):
            return self._error(answer)
        message = self._message_json(request.body, answer)
        headers = {**limits, **self.message_headers}
        return _json_response(200, message, headers, answer.delay_seconds + self.latency_seconds)

    def _count_tokens(self, request: RecordedRequest) -> _Response:
        body = request.body if isinstance(request.body, dict) else None
        if body is None or "model" not in body or "messages" not in body:
            return self._error(Error(400, "invalid_request_error", "model, messages: required"))
        problem = self._unknown_model(body) or self._refused_choice(body)
        if problem is not None:
            return self._error(problem)
        return _json_response(200, {"input_tokens": count_input_tokens(body)})

    def _rate_limit(self) -> tuple[dict[str, str], Error | None]:
        """Count a message against the window: its rate-limit headers, and the 429 to answer
        when it is past the limit."""
        limit = self._requests_per_window
        if limit is None:
            return {}, None
        now = time.monotonic()
        with self._lock:
            start, used = self._window
            if now - start >= self._window_seconds:
                start, used = now, 0
            used += 1
            self._window = (start, used)
            refused = used > limit
            self.rate_limited += refused
        left = max(0.0, start + self._window_seconds - now)
        reset = datetime.now(UTC) + timedelta(seconds=left)
        headers = {
            "anthropic-ratelimit-requests-limit": str(limit),
            "anthropic-ratelimit-requests-remaining": str(max(0, limit - used)),
            "anthropic-ratelimit-requests-reset": reset.isoformat().replace("+00:00", "Z"),
        }
        if not refused:
            return headers, None
        retry = {"retry-after": str(max(1, math.ceil(left))), **headers}
        message = "Number of request tokens has exceeded your per-minute rate limit"
        return headers, Error(429, "rate_limit_error", message, retry)

    def _message_json(self, params: Mapping[str, Any], answer: ToolUse | Text) -> dict[str, Any]:
        return message_json(
            params,
            answer,
            default_usage=self._usage,
            message_id=self._next_id("msg"),
            tool_use_id=self._next_id("toolu"),
        )

    def _create_batch(self, request: RecordedRequest) -> _Response:
        items = request.body.get("requests") if isinstance(request.body, dict) else None
        if not isinstance(items, list) or not items:
            return self._error(Error(400, "invalid_request_error", "requests: a non-empty list"))
        batch_id = self._next_id("msgbatch")
        lines = []
        succeeded = 0
        for item in items:
            custom_id, params = item.get("custom_id"), item.get("params")
            item_request = RecordedRequest(
                "POST", "/v1/messages", request.headers, params, custom_id
            )
            result = self._batch_item(item_request)
            succeeded += result["type"] == "succeeded"
            lines.append(json.dumps({"custom_id": custom_id, "result": result}, sort_keys=True))
        # The real API gives results in no particular order; reversing keeps callers honest.
        lines.reverse()
        batch = _Batch(lines, succeeded)
        with self._lock:
            self._batches[batch_id] = batch
        return _json_response(200, self._batch_json(batch_id, batch, ended=False))

    def _batch_item(self, request: RecordedRequest) -> dict[str, Any]:
        problem = invalid_message_params(request.body)
        answer = (
            Error(400, "invalid_request_error", problem)
            if problem
            else self._unknown_model(request.body)
            or self._refused_choice(request.body)
            or self._next_answer(request)
        )
        if isinstance(answer, Error):
            return {"type": "errored", "error": error_body(answer, None)}
        return {"type": "succeeded", "message": self._message_json(request.body, answer)}

    def _retrieve_batch(self, batch_id: str) -> _Response:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is not None:
                batch.polls += 1
                ended = batch.polls > self._batch_polls_before_end
        if batch is None:  # answered outside the lock: the error takes it for its request id
            return self._error(Error(404, "not_found_error", f"no batch {batch_id}"))
        return _json_response(200, self._batch_json(batch_id, batch, ended=ended))

    def _batch_json(self, batch_id: str, batch: _Batch, *, ended: bool) -> dict[str, Any]:
        url = f"{self.base_url}/v1/messages/batches/{batch_id}/results" if ended else None
        return batch_json(
            batch_id, count=len(batch.lines), succeeded=batch.succeeded, results_url=url
        )

    def _batch_results(self, batch_id: str) -> _Response:
        with self._lock:
            batch = self._batches.get(batch_id)
        if batch is None:
            return self._error(Error(404, "not_found_error", f"no batch {batch_id}"))
        body = "".join(line + "\n" for line in batch.lines).encode()
        with self._lock:
            cut = self._cut_results_streams > 0
            self._cut_results_streams -= cut
        return _Response(200, body, {"content-type": "application/binary"}, cut_short=cut)

    def _error(self, error: Error) -> _Response:
        request_id = self._next_id("req")
        headers = {**error.headers, "request-id": request_id}
        return _json_response(
            error.status, error_body(error, request_id), headers, error.delay_seconds
        )


def _json_response(
    status: int, payload: Any, headers: Mapping[str, str] | None = None, delay: float = 0.0
) -> _Response:
    body = json.dumps(payload, sort_keys=True).encode()
    return _Response(status, body, {"content-type": "application/json", **(headers or {})}, delay)


class _Server(ThreadingHTTPServer):
    # Request threads are joined on close (block_on_close), so none outlives the server.
    daemon_threads = False

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        fake: FakeAnthropicServer,
    ) -> None:
        self.fake = fake
        super().__init__(address, handler)


class _RequestHandler(BaseHTTPRequestHandler):
    # HTTP/1.0: one request per connection, so no idle keep-alive thread blocks shutdown.
    protocol_version = "HTTP/1.0"
    server: _Server

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests read ``requests``, not stderr."""

    def _answer(self, method: str) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        fake = self.server.fake
        response = fake._serve(method, self.path, headers, raw)
        request_id = response.headers.get("request-id") or fake._next_id("req")
        # A delay cut short by stop() sends nothing; the client is long gone or shutting down.
        if response.delay_seconds and fake._stopping.wait(response.delay_seconds):
            return
        try:
            self.send_response(response.status)
            for name, value in {**response.headers, "request-id": request_id}.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(response.body)))
            self.end_headers()
            body = response.body[: len(response.body) // 2] if response.cut_short else response.body
            self.wfile.write(body)
            self.wfile.flush()
            with fake._lock:
                fake._written.append(time.monotonic())
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and hung up: exactly what a delay is meant to provoke


def server_from_script(
    script: Mapping[str, Any], *, api_key: str | None = None, record_path: Path | None = None
) -> FakeAnthropicServer:
    """Build a (not yet started) server from a script's JSON form."""
    default = script.get("default")
    return FakeAnthropicServer(
        [answer_from_json(answer) for answer in script.get("answers", [])],
        default=answer_from_json(default) if default else None,
        usage=FakeUsage(**script["usage"]) if "usage" in script else None,
        api_key=api_key,
        batch_polls_before_end=int(script.get("batch_polls_before_end", 0)),
        record_path=record_path,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakes.fake_anthropic")
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--script", type=Path)
    parser.add_argument("--record", type=Path)
    parser.add_argument("--api-key")
    options = parser.parse_args(argv)
    script = json.loads(options.script.read_text("utf-8")) if options.script else {}
    done = threading.Event()

    def on_signal(signal_number: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with server_from_script(script, api_key=options.api_key, record_path=options.record) as server:
        # Written whole then renamed, so a reader never sees a partial port number.
        partial = options.port_file.with_name(options.port_file.name + ".partial")
        partial.write_text(str(server.port), "utf-8")
        os.replace(partial, options.port_file)
        while not done.wait(0.2):
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
