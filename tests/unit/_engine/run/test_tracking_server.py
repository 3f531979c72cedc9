"""The MLflow tracking URI is checked before training: it must answer, and answer as MLflow does."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from litstarter._engine.run.tracking import check_tracking_server
from litstarter.errors import UsageError

pytest.importorskip("requests")


def answering(status: int, body: bytes, kind: str) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    return Handler


@contextmanager
def server(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as httpd:
        thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_address[1]}"
        finally:
            httpd.shutdown()
            thread.join(5)


def test_a_plain_web_server_is_refused_in_one_line_and_mlflow_answers_pass(tmp_path) -> None:
    files = http.server.SimpleHTTPRequestHandler  # what python3 -m http.server runs
    with server(lambda *a, **k: files(*a, directory=str(tmp_path), **k)) as uri:
        with pytest.raises(UsageError) as caught:
            check_tracking_server(uri)
    message = str(caught.value)
    assert "answers HTTP but is not an MLflow tracking server" in message and "404" in message, message
    assert "\n" not in message
    mlflow_like = [
        (200, json.dumps({"experiments": []}).encode(), "application/json"),
        (500, json.dumps({"error_code": "INTERNAL_ERROR", "message": "db"}).encode(), "application/json"),
        (401, b"You are not authenticated", "text/plain"),
    ]
    for status, body, kind in mlflow_like:
        with server(answering(status, body, kind)) as uri:
            check_tracking_server(uri)
    with server(answering(200, b"<html>a proxy's page</html>", "text/html")) as uri, pytest.raises(UsageError):
        check_tracking_server(uri)
