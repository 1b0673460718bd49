"""A small OpenAI-compatible streaming server on loopback, for benchmark tools' integration tests.

`POST /v1/chat/completions` (and `/v1/completions`) with `"stream": true` answers with server-sent
events: the first content chunk after `ttft_s`, then one chunk every `itl_s` until `tokens` chunks
(one word each, " the": one token in common BPE vocabularies) and a final chunk with
`finish_reason` and `usage`, then `data: [DONE]`. `GET /v1/models` and `/health` answer for
readiness probes. The server binds 127.0.0.1 on an ephemeral port, answers at most
`max_requests` generation requests (later ones get 503), and stops on `close()`.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WORD = " the"


class _Handler(BaseHTTPRequestHandler):
    server: "StubServer"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _json(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._json(200, {"object": "list", "data": [{"id": self.server.model, "object": "model",
                                                         "owned_by": "stub", "created": 0}]})
        elif self.path.rstrip("/") in ("/health", "/v1/health"):
            self._json(200, {"status": "ok"})
        else:
            self._json(404, {"error": "not found"})

    def _event(self, body: dict) -> None:
        self.wfile.write(b"data: " + json.dumps(body).encode() + b"\n\n")
        self.wfile.flush()

    def _chunk(self, chat: bool, text: str | None, finish: str | None) -> dict:
        choice = ({"index": 0, "delta": {"content": text} if text is not None else {}, "finish_reason": finish}
                  if chat else {"index": 0, "text": text or "", "finish_reason": finish})
        return {"id": "stub", "object": "chat.completion.chunk" if chat else "text_completion",
                "created": 0, "model": self.server.model, "choices": [choice]}

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        req = json.loads(self.rfile.read(length) or b"{}")
        if not self.server.admit():
            self._json(503, {"error": "the stub's request budget is spent"})
            return
        chat = self.path.endswith("/chat/completions")
        n, s = self.server.tokens, self.server
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        start = time.perf_counter()
        for i in range(n):
            time.sleep(max(0.0, start + s.ttft_s + i * s.itl_s - time.perf_counter()))
            self._event(self._chunk(chat, WORD, None))
        final = self._chunk(chat, None, "length")
        prompt = req.get("messages") or req.get("prompt") or ""
        final["usage"] = {"prompt_tokens": len(json.dumps(prompt).split()), "completion_tokens": n,
                          "total_tokens": n + len(json.dumps(prompt).split())}
        self._event(final)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


class StubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, ttft_s: float, itl_s: float, tokens: int, max_requests: int = 200,
                 model: str = "stub-model"):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.ttft_s, self.itl_s, self.tokens, self.model = ttft_s, itl_s, tokens, model
        self.max_requests, self.requests = max_requests, 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def admit(self) -> bool:
        with self._lock:
            self.requests += 1
            return self.requests <= self.max_requests

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> "StubServer":
        self._thread.start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5)
