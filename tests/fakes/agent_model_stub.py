"""A local stand-in for the model APIs the agent CLIs talk to, streaming as the real ones do.

`POST /v1/messages` answers the way Anthropic's Messages API streams (`stream: true`): the
server-sent events `message_start`, `content_block_start`, `content_block_delta`,
`content_block_stop`, `message_delta`, `message_stop`, one text block saying `ok` (and the
same message as plain JSON when the request does not ask for a stream). `POST /v1/responses`
answers the way OpenAI's Responses API streams: `response.created`,
`response.output_item.added`, `response.output_text.delta`, `response.output_item.done`,
`response.completed`. Any other path gets a 404 in the API's error shape, so a CLI's side
calls (model lists, telemetry) fail fast instead of hanging.

Every POST body is recorded (path and parsed JSON) in `requests`. It listens on 127.0.0.1 on a
free port in a background thread; use it as a context manager.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

ANSWER = "ok"


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A CLI closing its connection early (it has read message_stop) is not a failure.
        return


class AgentModelStub:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def bodies(self, path: str) -> list[dict[str, Any]]:
        with self._lock:
            return [body for recorded, body in self.requests if recorded == path]

    def __enter__(self) -> AgentModelStub:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append((path, body))

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                self._json(404, {"type": "error", "error": {"type": "not_found_error"}})

            def do_HEAD(self) -> None:
                self._json(404, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                path = self.path.split("?", 1)[0]
                stub._record(path, body)
                if path.endswith("/v1/messages"):
                    self._anthropic(body)
                elif path.endswith("/responses"):
                    self._responses(body)
                else:
                    self._json(404, {"type": "error", "error": {"type": "not_found_error"}})

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _events(self, events: list[tuple[str, dict[str, Any]]]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for name, payload in events:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode())
                    self.wfile.flush()
                self.close_connection = True

            def _anthropic(self, body: dict[str, Any]) -> None:
                model = str(body.get("model", "claude-stub"))
                usage = {"input_tokens": 10, "output_tokens": 1}
                message: dict[str, Any] = {
                    "id": "msg_stub",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                }
                if not body.get("stream"):
                    done = {**message, "content": [{"type": "text", "text": ANSWER}]}
                    self._json(200, {**done, "stop_reason": "end_turn"})
                    return
                self._events(
                    [
                        ("message_start", {"type": "message_start", "message": message}),
                        (
                            "content_block_start",
                            {
                                "type": "content_block_start",
                                "index": 0,
                                "content_block": {"type": "text", "text": ""},
                            },
                        ),
                        (
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": 0,
                                "delta": {"type": "text_delta", "text": ANSWER},
                            },
                        ),
                        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                        (
                            "message_delta",
                            {
                                "type": "message_delta",
                                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                "usage": {"output_tokens": 1},
                            },
                        ),
                        ("message_stop", {"type": "message_stop"}),
                    ]
                )

            def _responses(self, body: dict[str, Any]) -> None:
                item = {
                    "type": "message",
                    "id": "msg_stub",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
                }
                response = {"id": "resp_stub", "object": "response", "status": "in_progress"}
                usage = {
                    "input_tokens": 10,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 1,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 11,
                }
                self._events(
                    [
                        ("response.created", {"type": "response.created", "response": response}),
                        (
                            "response.output_item.added",
                            {
                                "type": "response.output_item.added",
                                "output_index": 0,
                                "item": {**item, "content": [], "status": "in_progress"},
                            },
                        ),
                        (
                            "response.output_text.delta",
                            {
                                "type": "response.output_text.delta",
                                "item_id": "msg_stub",
                                "output_index": 0,
                                "content_index": 0,
                                "delta": ANSWER,
                            },
                        ),
                        (
                            "response.output_item.done",
                            {"type": "response.output_item.done", "output_index": 0, "item": item},
                        ),
                        (
                            "response.completed",
                            {
                                "type": "response.completed",
                                "response": {
                                    **response,
                                    "status": "completed",
                                    "output": [item],
                                    "usage": usage,
                                },
                            },
                        ),
                    ]
                )

        return Handler
