"""scripts/gpu-check.sh --dry-run, so that the one prepared GPU check cannot rot between
GPU runs: every stage runs here against a stand-in for the GPU image and wheels
repacked from this environment (no package registry needed)."""

import os
import pathlib
import re
import subprocess
import sys
import tarfile

import pytest

pytest.importorskip("torch")

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    dest = tmp_path_factory.mktemp("wheels")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_env.py"), "installed-wheels",
                    str(dest)], check=True, timeout=300)
    return dest


def dry_run(wheels, out, **env):
    # The CPU variants of the e2e GPU tests run in CI on their own; here the quick ones.
    env = dict(os.environ, PYTHON=sys.executable, DET_GPU_CHECK_MARK="cpu_twin and not e2e",
               **env)
    env.pop("PYTHONPATH", None)
    return subprocess.run(["bash", str(ROOT / "scripts" / "gpu-check.sh"), "--dry-run",
                           str(wheels), str(out)], env=env, capture_output=True, text=True,
                          timeout=800)


def test_wheels_bring_what_the_image_lacks_and_nothing_it_has(wheels):
    names = {re.sub(r"[-_.]+", "-", w.name.split("-")[0]).lower() for w in wheels.glob("*.whl")}
    assert {"sqlalchemy", "fastapi", "pydantic", "alembic", "uvicorn"} <= names, names
    lines = (ROOT / "scripts" / "gpu-image-packages.txt").read_text().splitlines()
    image = {l.strip() for l in lines if l.strip() and not l.startswith("#")}
    assert "torch" in image and not names & image, names & image
    assert sum(w.stat().st_size for w in wheels.glob("*.whl")) < 32 * 2**20


def test_dry_run_passes_every_stage_and_prints_the_readme_markdown(wheels, tmp_path):
    out = tmp_path / "out"
    proc = dry_run(wheels, out)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-6000:]
    assert re.search(r"import probe: (\d+) of \1 determined modules imported", text) or \
        "optional integration module(s) did not" in text, text[-6000:]
    assert "FAILED" not in text.split("import probe:")[1].split("\n\n")[0]
    markdown = (out / "readme-gpu.md").read_text()
    for step in ("pytest tests/gpu", "benchmarks/gpu/throughput.py", "benchmarks/gpu/packing.py"):
        row = rf"^\| {re.escape(step)}.* \| passed \| \d+ s \|$"
        assert re.search(row, markdown, re.M), markdown
    assert re.search(r"pytest tests/gpu \(\d+ passed", markdown), markdown
    assert "| mlp (tiny CPU sizes) | fp32 |" in markdown and "| 2 | 4 | 0 |" in markdown
    assert markdown in proc.stdout  # printed for the next session to paste
    assert re.search(r"^\| import probe \(\d+ of \d+ determined modules imported\) \| passed \|",
                     markdown, re.M), markdown
    assert sorted(p.name for p in out.iterdir()) == [
        "gpu-check.log", "gpu-test-files.tgz", "gpu-tests.xml", "packing.json", "readme-gpu.md",
        "throughput.json"]
    with tarfile.open(out / "gpu-test-files.tgz") as logs:  # a post-mortem of the tests
        assert all(m.name.startswith("tests/") for m in logs.getmembers())


def test_dry_run_fails_loudly_when_a_wheel_is_missing(wheels, tmp_path):
    partial = tmp_path / "partial"
    partial.mkdir()
    for wheel in wheels.glob("*.whl"):
        if not wheel.name.lower().startswith("sqlalchemy"):
            (partial / wheel.name).symlink_to(wheel)
    proc = dry_run(partial, tmp_path / "out")
    assert proc.returncode != 0
    assert "FAILED: determined.master" in proc.stdout and "sqlalchemy" in proc.stdout
    assert "gpu-check: the import probe failed" in proc.stdout
