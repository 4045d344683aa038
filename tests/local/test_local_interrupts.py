"""A local run's driver takes Ctrl-C between events (``local._interrupts``): a real
SIGINT to this process inside a section that must not be cut does not raise there; the
loop sees it, is woken, and raises it itself, once."""

import multiprocessing.connection
import os
import signal
import threading
import time

import pytest

from determined.local._interrupts import DeferredInterrupts


def test_sigint_inside_a_section_is_raised_only_where_the_loop_asks():
    with DeferredInterrupts() as interrupts:
        assert interrupts.wake is not None
        # A request read and not yet answered: an interrupt here used to lose the answer.
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the handler has run by now (it runs between bytecodes)
        assert interrupts.count == 1
        # The loop's wait is woken at once, not after its timeout.
        started = time.monotonic()
        ready = multiprocessing.connection.wait([interrupts.wake], timeout=5)
        assert ready == [interrupts.wake] and time.monotonic() - started < 1
        with pytest.raises(KeyboardInterrupt):
            interrupts.raise_pending()
        interrupts.raise_pending()  # once: the graceful stop's loop goes on
        assert multiprocessing.connection.wait([interrupts.wake], timeout=0) == []
        os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C only counts
        time.sleep(0.05)
        interrupts.raise_pending()
        assert interrupts.count == 2
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):  # Python's own handling is back
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)


def test_nothing_changes_outside_the_main_thread_or_where_sigint_is_ignored():
    seen = {}

    def in_thread():
        with DeferredInterrupts() as interrupts:
            seen["wake"] = interrupts.wake
            seen["handler"] = signal.getsignal(signal.SIGINT)

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join()
    assert seen == {"wake": None, "handler": signal.default_int_handler}

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # e.g. started with nohup ... &
    try:
        with DeferredInterrupts() as interrupts:
            assert interrupts.wake is None
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            interrupts.raise_pending()  # ignored: nothing to raise
            assert interrupts.count == 0
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
