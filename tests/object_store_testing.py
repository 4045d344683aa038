"""Real object-store servers for tests: moto's S3 server and gcp-storage-emulator,
each a subprocess on a free loopback port, stopped when the test ends."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Dict, Iterator

import httpx

BUCKET = "det-ckpts"
S3_KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bin(name: str) -> str:
    return os.path.join(os.path.dirname(sys.executable), name)


@contextlib.contextmanager
def _server(cmd, url: str, log_path: str, env=None) -> Iterator[subprocess.Popen]:
    log = open(log_path, "ab")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env=env)
    try:
        deadline = time.monotonic() + 120  # a loaded machine starts it slowly
        while True:
            assert proc.poll() is None, open(log_path, errors="replace").read()[-2000:]
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, f"{cmd[0]} did not start"
                time.sleep(0.1)
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


@contextlib.contextmanager
def s3_server(log_dir: str) -> Iterator[Dict[str, str]]:
    """A moto S3 server with bucket ``BUCKET``; yields the checkpoint_storage section
    (credentials in it, as a config would carry them)."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with _server([_bin("moto_server"), "-H", "127.0.0.1", "-p", str(port)], url,
                 os.path.join(log_dir, "moto.log")):
        import boto3

        boto3.client("s3", endpoint_url=url, aws_access_key_id="testing",
                     aws_secret_access_key="testing",
                     region_name="us-east-1").create_bucket(Bucket=BUCKET)
        yield {"type": "s3", "bucket": BUCKET, "endpoint_url": url,
               "access_key": "testing", "secret_key": "testing"}


#: Requests moto serves before it checks credentials: enough to set up users.
_FREE_ACTIONS = 50


@contextlib.contextmanager
def s3_server_with_auth(log_dir: str) -> Iterator[Dict[str, Dict[str, str]]]:
    """A moto S3 server that checks credentials (IAM), with bucket ``BUCKET``; yields
    checkpoint_storage sections: ``allowed`` (a user who may use S3), ``no_policy`` (a
    user without any permission), ``wrong_secret`` and ``unknown_key``."""
    import json

    import boto3
    import botocore.exceptions

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(_FREE_ACTIONS))
    with _server([_bin("moto_server"), "-H", "127.0.0.1", "-p", str(port)], url,
                 os.path.join(log_dir, "moto.log"), env=env):
        iam = boto3.client("iam", endpoint_url=url, region_name="us-east-1",
                           aws_access_key_id="setup", aws_secret_access_key="setup")
        keys = {}
        for user in ("det", "nobody"):
            iam.create_user(UserName=user)
            keys[user] = iam.create_access_key(UserName=user)["AccessKey"]
        iam.put_user_policy(UserName="det", PolicyName="s3", PolicyDocument=json.dumps(
            {"Version": "2012-10-17",
             "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        bogus = boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                             aws_access_key_id="AKIAUNKNOWN", aws_secret_access_key="x")
        for _ in range(_FREE_ACTIONS):  # use up the unchecked requests
            try:
                bogus.list_buckets()
            except botocore.exceptions.ClientError:
                break
        else:
            raise AssertionError("moto did not start checking credentials")

        def section(key_id: str, secret: str) -> Dict[str, str]:
            return {"type": "s3", "bucket": BUCKET, "endpoint_url": url,
                    "access_key": key_id, "secret_key": secret}

        allowed = section(keys["det"]["AccessKeyId"], keys["det"]["SecretAccessKey"])
        s3_client(allowed).create_bucket(Bucket=BUCKET)
        yield {"allowed": allowed,
               "no_policy": section(keys["nobody"]["AccessKeyId"],
                                    keys["nobody"]["SecretAccessKey"]),
               "wrong_secret": section(keys["det"]["AccessKeyId"], "not-the-secret"),
               "unknown_key": section("AKIAUNKNOWN", "x")}


@contextlib.contextmanager
def gcs_server(log_dir: str) -> Iterator[Dict[str, str]]:
    """A gcp-storage-emulator with bucket ``BUCKET``; yields the environment that points
    clients at it (``STORAGE_EMULATOR_HOST``)."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with _server([_bin("gcp-storage-emulator"), "start", "--host", "127.0.0.1", "--port",
                  str(port), "--in-memory", "--default-bucket", BUCKET], url,
                 os.path.join(log_dir, "gcs.log")):
        yield {"STORAGE_EMULATOR_HOST": url}


def s3_client(section: Dict[str, str]):
    import boto3

    return boto3.client("s3", endpoint_url=section["endpoint_url"],
                        aws_access_key_id=section["access_key"],
                        aws_secret_access_key=section["secret_key"], region_name="us-east-1")
