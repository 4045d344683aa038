"""``det e create`` when the master stored the experiment but its answer never came
(the master died, the connection dropped): the CLI retries with the same idempotency
key and ends with exactly one experiment, printing its id. A real master behind a
real TCP proxy on loopback that relays the first ``POST /api/v1/experiments`` to the
master, reads the master's whole answer, and closes the CLI's connection instead of
passing it on."""

import socket
import threading
import time

import httpx
import yaml

from det_cli_testing import run_det
from proxy_testing import DroppingProxy


def _before_idempotent_create(info):
    """``GET /master`` as a master from before it honoured Idempotency-Key answers."""
    return {k: v for k, v in info.items() if k not in ("idempotent_create", "agent_protocol")}


def test_create_retried_after_lost_answer_makes_one_experiment(master_factory, tiny_dir,
                                                               tmp_path):
    master = master_factory(slots=0)
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    proxy = DroppingProxy(master.port)
    try:
        out = run_det(["-m", f"http://127.0.0.1:{proxy.port}", "e", "create", "--paused",
                       path, tiny_dir], timeout=120)
    finally:
        proxy.close()
    assert out.returncode == 0, out.stdout + out.stderr
    assert proxy.dropped is not None and b" 201 " in proxy.dropped.split(b"\r\n")[0]
    assert len(proxy.creates) == 2  # the first (answer dropped) and one retry
    keys = [line for request in proxy.creates for line in request.split(b"\r\n")
            if line.lower().startswith(b"idempotency-key:")]
    assert len(keys) == 2 and keys[0] == keys[1]
    with master.client() as api:
        ids = [e["id"] for e in api.get("/experiments").json()["experiments"]]
    assert len(ids) == 1
    assert out.stdout.strip() == f"Created experiment {ids[0]}"
    assert out.stderr.count("retrying") == 1, out.stderr


def test_create_without_master_is_not_retried(tiny_dir):
    """No connection at the first try: the master never saw the create, so the CLI says
    so at once (no retries, no retry line)."""
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    out = run_det(["-m", f"127.0.0.1:{port}", "e", "create", tiny_dir / "const.yaml",
                   tiny_dir], timeout=60)
    assert out.returncode == 1 and "no master is reachable" in out.stderr, out.stderr
    assert "retrying" not in out.stderr, out.stderr


def test_sdk_create_retried_after_lost_answer_makes_one_experiment(master_factory, tiny_dir,
                                                                   capfd):
    """The SDK creates through the same client: one experiment, its id returned."""
    from determined.experimental import Determined

    master = master_factory(slots=0)
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    proxy = DroppingProxy(master.port)
    try:
        ref = Determined(master=f"http://127.0.0.1:{proxy.port}").create_experiment(
            config, str(tiny_dir), activate=False)
    finally:
        proxy.close()
    assert proxy.dropped is not None and len(proxy.creates) == 2
    with master.client() as api:
        ids = [e["id"] for e in api.get("/experiments").json()["experiments"]]
    assert ids == [ref.id]
    assert capfd.readouterr().err.count("retrying") == 1


def test_create_answered_by_a_master_killed_and_started_again_makes_one_experiment(
        master_factory, tiny_dir, tmp_path):
    """The master is SIGKILLed right after it stored the create (its answer never sent)
    and is started again 5 s later on the same port and data: the CLI's retries span the
    restart and end with the one experiment stored before the kill."""
    master = master_factory(slots=0)
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    restarted = threading.Event()

    def kill_then_restart():
        master.sigkill()

        def later():
            time.sleep(5)
            master.start()
            restarted.set()
        threading.Thread(target=later, daemon=True).start()

    proxy = DroppingProxy(master.port, on_drop=kill_then_restart)
    try:
        out = run_det(["-m", f"http://127.0.0.1:{proxy.port}", "e", "create", "--paused",
                       path, tiny_dir], timeout=180)
    finally:
        proxy.close()
    assert restarted.is_set(), out.stdout + out.stderr
    assert out.returncode == 0, out.stdout + out.stderr
    with master.client() as api:
        ids = [e["id"] for e in api.get("/experiments").json()["experiments"]]
    assert len(ids) == 1
    assert out.stdout.strip() == f"Created experiment {ids[0]}"
    assert out.stderr.count("retrying for up to 30 s") == 1, out.stderr


def test_create_against_a_master_ignoring_the_key_is_not_retried(master_factory, tiny_dir):
    """A master from before idempotent creates ignores the key (its ``GET /master`` has
    no ``idempotent_create``): a retry would make a second experiment. The CLI asks
    ``GET /master`` before retrying, does not retry, and says the experiment may exist."""
    master = master_factory(slots=0)
    proxy = DroppingProxy(master.port, master_info=_before_idempotent_create)
    try:
        out = run_det(["-m", f"http://127.0.0.1:{proxy.port}", "e", "create", "--paused",
                       tiny_dir / "const.yaml", tiny_dir], timeout=120)
    finally:
        proxy.close()
    with master.client() as api:
        ids = [e["id"] for e in api.get("/experiments").json()["experiments"]]
    assert len(proxy.creates) == 1 and len(ids) == 1, (proxy.creates, ids, out.stderr)
    assert b"GET /api/v1/master HTTP/1.1" in proxy.requests[proxy.requests.index(
        proxy.creates[0].split(b"\r\n", 1)[0]):], proxy.requests  # asked after the loss
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"Not retried: the master at http://127.0.0.1:{proxy.port} ignores the " \
           "Idempotency-Key header" in out.stderr, out.stderr
    assert "det experiment list" in out.stderr and "retrying" not in out.stderr, out.stderr


def test_the_master_says_it_honours_the_key(master_factory):
    master = master_factory(slots=0)
    assert httpx.get(master.url + "/api/v1/master", timeout=30).json()["idempotent_create"]
