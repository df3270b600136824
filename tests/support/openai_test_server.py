"""A local OpenAI-compatible test server (``POST /v1/chat/completions``) for the LLM client, step and
judges. Test code only: it stands in for a ``vllm serve`` server, which cannot run on these machines.

The test gives a ``backend(request_body) -> Reply`` function; the server records every request (headers
and JSON body), tracks how many requests are in flight at once, and answers with the reply's content,
finish reason, refusal, HTTP status, raw body or delay. Started on a free port in a daemon thread::

    with OpenAITestServer(backend) as server:
        client = LLMClient(server.url, "test-model")
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One answer. ``content`` may be a str or a list of str (one choice each, for ``n`` > 1)."""

    content: str | list[str] | None = ""
    finish_reason: str = "stop"
    refusal: str | None = None
    status: int = 200
    raw: bytes | None = None       # sent as the body as is (malformed HTTP answers)
    delay_s: float = 0.0


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class _State:
    backend: Callable[[dict[str, Any]], Reply]
    requests: list[Recorded] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    contents = reply.content if isinstance(reply.content, list) else [reply.content]
    choices = [{"index": i, "finish_reason": reply.finish_reason, "logprobs": None,
                "message": {"role": "assistant", "content": c, "refusal": reply.refusal}}
               for i, c in enumerate(contents)]
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "test"), "choices": choices,
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature; keep tests quiet
        return

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        with state.lock:
            state.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, b'{"error": {"message": "not found"}}')
                return
            reply = state.backend(body)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.raw is not None:
                self._send(reply.status, reply.raw)
            elif reply.status != 200:
                self._send(reply.status, json.dumps({"error": {"message": "test error", "code": reply.status}})
                           .encode())
            else:
                self._send(200, json.dumps(_completion(body, reply)).encode())
        finally:
            with state.lock:
                state.in_flight -= 1

    def _send(self, status: int, payload: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


class OpenAITestServer:
    """The server; ``url`` is its API base (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, backend: Callable[[dict[str, Any]], Reply]) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = _State(backend)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="openai-test")

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> list[Recorded]:
        with self._server.state.lock:
            return list(self._server.state.requests)

    @property
    def max_in_flight(self) -> int:
        return self._server.state.max_in_flight

    def set_backend(self, backend: Callable[[dict[str, Any]], Reply]) -> None:
        self._server.state.backend = backend

    def __enter__(self) -> OpenAITestServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def user_text(body: dict[str, Any]) -> str:
    """The last user message of a chat request."""
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            return str(msg.get("content") or "")
    return ""
