"""hybrid.core.gcpause.paused_collector: no automatic collection inside (even when a library re-enables the
collector), thresholds restored and objects frozen on leaving, nested blocks sharing one pause."""

from __future__ import annotations

import gc

import pytest

from hybrid.core.gcpause import paused_collector


@pytest.fixture(autouse=True)
def _restore_collector():
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    gc.enable()
    gc.set_threshold(700, 10, 10)
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    (gc.enable if enabled else gc.disable)()


def _cycles(n: int) -> None:
    for _ in range(n):
        a: list = []
        a.append(a)


def test_no_automatic_collection_inside_even_when_a_library_enables_the_collector():
    runs: list[int] = []

    def callback(phase: str, info: dict) -> None:
        if phase == "start":
            runs.append(info["generation"])

    gc.callbacks.append(callback)
    try:
        with paused_collector():
            gc.enable()  # what srsly does after every read while spaCy loads
            _cycles(20_000)
            assert runs == []
            assert gc.get_threshold()[0] == 0
        _cycles(20_000)
        assert runs  # automatic collection is back after the block
    finally:
        gc.callbacks.remove(callback)


def test_thresholds_restored_and_objects_frozen_by_the_last_block_to_leave():
    frozen = gc.get_freeze_count()
    with paused_collector():
        with paused_collector():
            kept = [[i] for i in range(1000)]
        assert gc.get_threshold()[0] == 0  # the outer block still pauses
        assert gc.get_freeze_count() == frozen
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() >= frozen + len(kept)


def test_the_pause_ends_when_the_block_raises():
    with pytest.raises(ValueError), paused_collector():
        raise ValueError("boom")
    assert gc.get_threshold() == (700, 10, 10)
