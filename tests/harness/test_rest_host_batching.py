"""A trial's training reports reach the master in few requests (RestTrialHost over an
httpx.MockTransport standing in for the master's REST API)."""

import json
import threading
import time

import httpx

from determined.common.api import MasterClient
from determined.harness._rest_host import RestTrialHost


def _host():
    requests = []
    lock = threading.Lock()

    def master(request: httpx.Request) -> httpx.Response:
        with lock:
            requests.append((request.url.path, json.loads(request.content)))
        return httpx.Response(200, json={"stop": False})

    client = MasterClient("example:8080", token="t", transport=httpx.MockTransport(master))
    return RestTrialHost(client), requests


def _reported(requests):
    rows = []
    for path, body in requests:
        if path.endswith("/training"):
            rows.append(body["batches"])
        elif path.endswith("/training-batch"):
            rows.extend(r["batches"] for r in body["reports"])
    return rows


def test_reports_of_a_fast_trial_share_requests_in_order():
    host, requests = _host()
    host.LINGER_SECONDS = 0.5  # generous: the test machine may be slow
    for batches in range(1, 11):  # a workload per millisecond
        host.report_training(batches, {"avg_metrics": {"loss": 1.0 / batches}})
        time.sleep(0.001)
    started = time.monotonic()
    host.flush()  # cuts the sender's wait short
    assert time.monotonic() - started < 0.4
    assert _reported(requests) == list(range(1, 11))
    assert len(requests) <= 2, [len(b.get("reports", [b])) for _, b in requests]


def test_a_full_batch_goes_without_waiting():
    host, requests = _host()
    host.LINGER_SECONDS = 30.0
    for batches in range(1, host.LINGER_REPORTS + 2):
        host.report_training(batches, {"avg_metrics": {}})
    deadline = time.monotonic() + 10
    while len(_reported(requests)) < host.LINGER_REPORTS and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(_reported(requests)) >= host.LINGER_REPORTS  # sent long before 30 s
    host.flush()
    assert _reported(requests) == list(range(1, host.LINGER_REPORTS + 2))
