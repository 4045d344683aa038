"""The fork server local trial processes start from (``determined.local._pool``): what it
imports, when it starts, how it and its trial processes exit."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import yaml

from det_cli_testing import run_det

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")


def python(code, tmp_path):
    """Run ``code`` in a fresh interpreter with this checkout's sources; its stdout."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC), HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_trial_side_imports_no_driver_modules(tmp_path):
    """What the fork server imports for a framework-free model is the trial side only:
    not the driver's database (SQLAlchemy), display (rich) or master modules."""
    out = python("""
        import json, sys
        import determined.local._trial_process, determined.local._pool
        import determined.local._fork_server
        print(json.dumps(sorted(m for m in ("sqlalchemy", "rich", "determined.master",
                                            "determined.local._driver") if m in sys.modules)))
    """, tmp_path)
    assert json.loads(out) == []


def test_started_server_is_the_one_trial_processes_fork_from(tmp_path):
    out = python("""
        import os
        from multiprocessing import forkserver
        from determined.local._pool import WarmPool, process_context, start_fork_server

        start_fork_server([])
        server = forkserver._forkserver._forkserver_pid
        pool = WarmPool(process_context([]), 1, [], 1)
        pool.fill()
        (process, _), = pool.idle
        with open(f"/proc/{process.pid}/stat") as f:
            parent = int(f.read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{server}/environ", "rb") as f:  # its environment at start
            marked = b"DET_LOCAL_FORK_SERVER=1" in f.read().split(b"\\0")
        pool.close()
        print(server, parent, marked, "DET_LOCAL_FORK_SERVER" in os.environ)
    """, tmp_path)
    server, parent, marked, left = out.split()
    assert server == parent
    assert (marked, left) == ("True", "False")  # the server is told, the driver keeps none


def test_server_exits_without_running_exit_handlers_its_children_still_do(tmp_path):
    """The server skips the interpreter's teardown (os._exit from the first exit
    handler); a process forked from it runs every handler as usual."""
    marker = tmp_path / "handlers.txt"
    python(f"""
        import atexit, os, sys
        atexit.register(lambda: open({str(marker)!r}, "a").write(f"{{os.getpid()}}\\n"))
        os.environ["DET_LOCAL_FORK_SERVER"] = "1"  # as start_fork_server sets it
        import determined.local._fork_server
        assert "DET_LOCAL_FORK_SERVER" not in os.environ  # not passed on
        child = os.fork()
        if child == 0:
            sys.exit(0)
        os.waitpid(child, 0)
        print(child)
    """, tmp_path)
    ran = marker.read_text().split()
    assert len(ran) == 1  # the child's, not the server's own
    assert ran[0] != str(os.getpid())


def test_another_process_importing_the_module_keeps_its_exit(tmp_path):
    """Importing ``_fork_server`` elsewhere (a tool importing every module) changes
    nothing: the exit handlers run and the exit status is the process's own."""
    marker = tmp_path / "handlers.txt"
    code = textwrap.dedent(f"""
        import atexit, sys
        atexit.register(lambda: open({str(marker)!r}, "a").write("ran\\n"))
        import determined.local._fork_server
        sys.exit(3)
    """)
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC), HOME=str(tmp_path))
    env.pop("DET_LOCAL_FORK_SERVER", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 3, out.stderr
    assert marker.read_text() == "ran\n"


def test_trial_process_exit_runs_exit_handlers_and_removes_its_workdir(tmp_path, tiny_dir):
    """A trial's own exit handlers run when its process ends (only PyTorch's library
    finalizers are skipped), and its working directory is removed."""
    model = tmp_path / "model"
    shutil.copytree(tiny_dir, model)
    marker = tmp_path / "trial-exit.txt"
    with open(model / "model_def.py", "a") as f:
        f.write(textwrap.dedent(f"""
            import atexit as _atexit
            _atexit.register(lambda: open({str(marker)!r}, "a").write("exited\\n"))
        """))
    cfg = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    cfg["searcher"]["max_length"] = {"batches": 10}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    workdirs = tmp_path / "workdirs"
    out = run_det(["experiment", "create", config, model, "--local", "--local-dir",
                   tmp_path / "local", "--json"], env={"DET_WORKDIR_ROOT": str(workdirs)})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["state"] == "COMPLETED"
    assert marker.read_text() == "exited\n"
    assert os.listdir(workdirs) == []


def test_torch_library_finalizers_are_dropped_others_kept(tmp_path):
    out = python("""
        import json, tempfile, weakref
        import torch.library
        from determined.local._pool import _drop_torch_library_finalizers

        lib = torch.library.Library("det_fork_server_test", "DEF")
        kept = tempfile.TemporaryDirectory()
        _drop_torch_library_finalizers()
        by_module = {}
        for f, info in weakref.finalize._registry.items():
            by_module.setdefault(info.func.__module__, set()).add(f.atexit)
        print(json.dumps({k: sorted(v) for k, v in by_module.items()}))
    """, tmp_path)
    by_module = json.loads(out)
    assert by_module["torch.library"] == [False]
    assert by_module["tempfile"] == [True]
