"""A trial's training reports reach the master in few requests (RestTrialHost over an
httpx.MockTransport standing in for the master's REST API)."""

import json
import threading
import time

import httpx

from determined.common.api import MasterClient
from determined.harness._host import OpKind, TrialOp
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
    # Far longer than the loop takes even on a loaded machine, so every report waits in
    # one batch; flush() must not wait it out.
    host.LINGER_SECONDS = 30.0
    for batches in range(1, 11):  # a workload per millisecond
        host.report_training(batches, {"avg_metrics": {"loss": 1.0 / batches}})
        time.sleep(0.001)
    started = time.monotonic()
    host.flush()  # cuts the sender's wait short
    assert time.monotonic() - started < 10.0
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


def _answering(answers):
    """A host whose master answers each path from ``answers`` (path suffix -> list of
    JSON answers, used in order) and records (method, path, body)."""
    requests = []

    def master(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        path = request.url.path.rsplit("/trial-runner/", 1)[1]
        requests.append((request.method, path, body))
        return httpx.Response(200, json=answers[path].pop(0))

    client = MasterClient("example:8080", token="t", transport=httpx.MockTransport(master))
    return RestTrialHost(client), requests


def test_a_validation_completing_its_op_is_one_request_that_brings_the_next_op():
    close = {"kind": "close", "length": None}
    host, requests = _answering({"validation": [{"stop": False, "op": close}]})
    metrics = {"validation_metrics": {"loss": 0.5}, "num_inputs": 4}
    host.report_validation_completing_op(10, metrics)
    assert host.next_operation().kind is OpKind.CLOSE  # no next-op request
    assert requests == [("POST", "validation", {"batches": 10, "metrics": metrics,
                                                "completes_op": True, "next_op": True})]


def test_without_a_next_op_in_the_answer_the_host_asks_for_it():
    train = {"kind": "train", "length": {"batches": 20}}
    host, requests = _answering({"validation": [{"stop": False, "op": None}],
                                 "next-op": [{"op": train}]})
    host.report_validation_completing_op(10, {"validation_metrics": {"loss": 0.5}})
    assert host.next_operation() == TrialOp.from_dict(train)
    assert [(m, p) for m, p, _ in requests] == [("POST", "validation"), ("GET", "next-op")]


def test_a_stopping_close_answered_with_the_validation_stops_the_trial():
    stop = {"kind": "close", "length": None, "stop": True}
    host, _ = _answering({"validation": [{"stop": False, "op": stop}]})
    host.report_validation_completing_op(10, {"validation_metrics": {"loss": 0.5}})
    assert not host.should_stop()
    assert host.next_operation().kind is OpKind.CLOSE and host.should_stop()
