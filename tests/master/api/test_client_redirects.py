"""The SDK/CLI client and a master address that answers with a redirect (a proxy in
front of the master, an old address): a GET follows it, any other request is a clear
error naming where it was sent; a 3xx is never parsed as a success body."""

import http.server
import threading

import pytest

from determined.common.api import APIError, MasterClient

from det_cli_testing import run_det


def _redirector(status: int, target: str):
    """A loopback server answering every request with ``status``, to ``target`` + path
    (no Location when ``target`` is empty)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            body = b'{"moved": true}'
            self.send_response(status)
            if target:
                self.send_header("Location", target + self.path)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer  # noqa: N815

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


@pytest.fixture
def redirect_to_master(shared_master):
    httpd, url = _redirector(307, shared_master.url)
    yield url
    httpd.shutdown()
    httpd.server_close()


def test_a_get_follows_the_redirect(redirect_to_master, shared_master):
    with MasterClient(redirect_to_master) as c:
        got = c.get_master()
    assert got["cluster_id"] == MasterClient(shared_master.url).get_master()["cluster_id"]


def test_a_post_redirect_is_an_error_naming_the_url(redirect_to_master, shared_master):
    with MasterClient(redirect_to_master) as c, pytest.raises(APIError) as e:
        c.login("determined", "")
    assert e.value.status == 307
    assert str(e.value) == (
        f"POST {redirect_to_master}/api/v1/auth/login was answered with a redirect (HTTP "
        f"307) to {shared_master.url}/api/v1/auth/login; a POST is not sent on to another "
        "address. Give the master's own address (-m/--master or $DET_MASTER)")


def test_a_redirect_without_a_location_is_an_error():
    httpd, url = _redirector(302, "")
    try:
        with MasterClient(url) as c, pytest.raises(APIError) as e:
            c.get_master()
        assert e.value.status == 302
        assert "without a Location to follow" in str(e.value)
        assert f"GET {url}/api/v1/master" in str(e.value)
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_cli_says_so_and_exits_non_zero(redirect_to_master):
    out = run_det(["-m", redirect_to_master, "experiment", "list"], timeout=120)
    assert out.returncode == 1, out.stdout
    assert "was answered with a redirect (HTTP 307)" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
