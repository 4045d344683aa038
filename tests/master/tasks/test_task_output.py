"""A task's output reaches its log while the task runs, also when it prints one line and
then waits (a service announcing its port): batches go out by age, not only when the
next line comes."""

import sys
import threading

from determined.tasks._launch import TaskProcess


def test_a_lone_line_is_passed_on_while_the_process_keeps_running():
    code = "import time; print('listening on 1234', flush=True); time.sleep(60)"
    proc = TaskProcess([sys.executable, "-c", code], {}, ".")
    got = []
    seen = threading.Event()

    def emit(lines):
        got.extend(lines)
        seen.set()

    pump = threading.Thread(target=lambda: proc.pump(emit), daemon=True)
    pump.start()
    try:
        assert seen.wait(30), "the line never left the batch while the process ran"
        assert got == ["listening on 1234"]
        assert proc.proc.poll() is None  # still running: sent by age, not at exit
    finally:
        proc.signal(15)
        pump.join(30)


def test_every_line_arrives_once_in_order_with_a_partial_last_line():
    code = "import sys; [print(i) for i in range(450)]; sys.stdout.write('tail')"
    proc = TaskProcess([sys.executable, "-c", code], {}, ".")
    batches = []
    assert proc.pump(batches.append) == 0
    assert all(len(b) <= 200 for b in batches)
    assert [line for b in batches for line in b] == [str(i) for i in range(450)] + ["tail"]


def test_the_shared_reader_prefixes_each_line_and_leaves_the_pipe_to_its_owner():
    import os

    from determined._procs import read_line_batches

    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"one\ntwo\nthree")
    os.close(write_fd)
    batches = []
    read_line_batches(read_fd, batches.append, max_age=0.1, max_lines=2, prefix="[rank 1] ")
    assert batches == [["[rank 1] one", "[rank 1] two"], ["[rank 1] three"]]
    os.close(read_fd)  # still open: the caller (agent, embedded agent, actor) closes it
