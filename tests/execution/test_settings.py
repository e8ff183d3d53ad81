"""A run's settings: one value, checked once when made, passed whole; its store crosses processes as its folder."""

from __future__ import annotations

import copy
import pickle

import pytest

from attnverify import RunSettings
from attnverify.execution.store import Store


@pytest.mark.parametrize("changes, error, message", [
    (dict(profile="slow"), ValueError, "profile must be one of ('quick', 'thorough'), got 'slow'"),
    (dict(seed=-1), ValueError, "seed must be an integer ≥ 0, got -1"),
    (dict(seed=True), TypeError, "seed must be an integer ≥ 0, got True"),
    (dict(examples=0), ValueError, "examples must be an integer in [1, 1000000], got 0"),
    (dict(examples=10**7), ValueError, "examples must be an integer in [1, 1000000], got 10000000"),
    (dict(workers=0), ValueError, "workers must be an integer ≥ 1, got 0"),
    (dict(backend="tpu"), ValueError, "backend must be one of ('numpy', 'cupy'), got 'tpu'"),
    (dict(store=3), TypeError, "store must be a folder, an attnverify.execution.Store or None, got int"),
    (dict(scheduler="bogus"), ValueError, "--scheduler must be local, local:N or a scheduler address"),
])
def test_every_setting_is_checked_when_the_settings_are_made(changes, error, message):
    with pytest.raises(error) as refused:
        RunSettings(**changes)
    assert str(refused.value).startswith(message)
    with pytest.raises(error):  # and when changed
        RunSettings().but(**changes)


def test_the_api_names_settings_as_keywords_or_gives_them_whole():
    base = RunSettings(profile="thorough", seed=3)
    assert RunSettings.given(None, seed=2) == RunSettings(seed=2)
    assert RunSettings.given(base) is base and RunSettings.given(base, seed=4) == RunSettings(profile="thorough", seed=4)
    assert base.choose(quick=1, thorough=2) == 2 and base.computed == ("thorough", "numpy", 3)
    with pytest.raises(TypeError, match="settings must be an attnverify.RunSettings or None, got dict"):
        RunSettings.given({"seed": 1})


def test_a_folder_store_crosses_processes_as_its_folder_and_one_in_memory_does_not(tmp_path):
    settings = RunSettings(store=tmp_path / "store")
    sent = pickle.loads(pickle.dumps(settings))
    assert sent == settings and sent.folder == settings.folder and sent.store is not settings.store
    with pytest.raises(TypeError, match="a Store in memory cannot be sent to another process"):
        pickle.dumps(RunSettings())
    assert copy.deepcopy(settings).store is settings.store  # a copy holds the same run's store


def test_each_task_reads_the_folder_with_a_store_of_its_own(tmp_path):
    settings = RunSettings(store=tmp_path)
    task = settings.of_task()
    assert task == settings and task.folder == settings.folder and task.store is not settings.store
    memory = RunSettings(store=Store())
    assert memory.of_task() is memory
