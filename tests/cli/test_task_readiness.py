"""`det notebook|tensorboard|shell start`'s readiness check against a real HTTP server:
only the service's own answer counts, not the proxy's 404 (task ended) or 502."""

import http.server
import threading

import pytest

from determined.cli._tasks import _answers


@pytest.fixture
def server():
    """A loopback HTTP server answering GET /<status> with that status."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the stdlib's name)
            self.send_response(int(self.path.strip("/")))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("kind", ["tensorboard", "notebook", "shell"])
def test_the_proxys_404_and_502_are_not_ready(server, kind):
    assert not _answers(f"{server}/404", kind, "t")  # the proxy: the task has ended
    assert not _answers(f"{server}/502", kind, "t")  # the proxy: not listening yet
    assert _answers(f"{server}/200", kind, "t")
    assert _answers(f"{server}/302", kind, "t")


def test_a_shell_server_refusing_a_plain_get_counts_as_ready(server):
    assert _answers(f"{server}/426", "shell", "t")
    assert not _answers(f"{server}/426", "tensorboard", "t")


def test_nothing_listening_is_not_ready():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert not _answers(f"http://127.0.0.1:{port}/", "tensorboard", "t")
