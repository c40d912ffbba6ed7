"""hybrid.core.background: work in a worker thread, its result (or error) when waited for."""

from __future__ import annotations

import threading

import pytest

from hybrid.core.background import in_background


def test_the_call_runs_in_another_thread_and_its_result_comes_back():
    release = threading.Event()

    def work(x: int) -> tuple[int, bool]:
        assert release.wait(10)  # runs while the caller goes on (the caller sets the event after starting it)
        return x * 2, threading.current_thread() is threading.main_thread()

    wait = in_background(work, 21)
    release.set()
    assert wait() == (42, False)


def test_its_error_is_raised_when_waited_for():
    def fail() -> None:
        raise ValueError("broken")

    wait = in_background(fail)
    with pytest.raises(ValueError, match="broken"):
        wait()


def test_a_worker_that_called_java_leaves_no_java_thread_behind():
    from hybrid.core.anserini import java_class

    threads = java_class("java.lang.Thread")
    system = java_class("java.lang.System")
    before = threads.getAllStackTraces().size()
    for _ in range(5):
        assert in_background(system.currentTimeMillis)() > 0
    assert threads.getAllStackTraces().size() == before
