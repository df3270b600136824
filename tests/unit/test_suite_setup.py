"""The test suite's own setup: where the run caches derived data, and what happens when the embedded broker
cannot start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO

from dictionaries import vocab
from processors.pipeline import BuildContext
from streams.settings import Settings

HOME_CACHE = (Path.home() / ".cache").resolve()


def _under_home_cache(path: Path) -> bool:
    return path.expanduser().resolve().is_relative_to(HOME_CACHE)


def test_when_tests_run_then_the_cache_folder_is_not_the_home_cache(cache_dir: Path) -> None:
    effective = {
        "DEID_CACHE_DIR": Path(os.environ["DEID_CACHE_DIR"]),
        "fixture cache_dir": cache_dir,
        "dictionaries.vocab.cache_dir()": vocab.cache_dir(),
        "BuildContext().cache_dir": BuildContext().cache_dir,
        "Settings().cache_dir": Settings().cache_dir,
    }
    in_home = {name: str(path) for name, path in effective.items() if _under_home_cache(path)}
    assert not in_home, f"tests would write derived vocabularies under {HOME_CACHE}: {in_home}"
    assert len({p.expanduser().resolve() for p in effective.values()}) == 1, effective


def test_when_the_environment_does_not_choose_then_the_cache_is_git_ignored_inside_the_checkout(
    cache_dir: Path,
) -> None:
    if os.environ.get("DEID_CACHE_DIR") != str(REPO / ".cache" / "test-vocab"):
        pytest.skip("DEID_CACHE_DIR was set by the environment")
    assert cache_dir.resolve().is_relative_to(REPO.resolve())
    assert ".cache/" in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()


NEEDS_BROKER = '''
import importlib.util

_spec = importlib.util.spec_from_file_location("integration_conftest", {conftest!r})
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)
broker = _mod.broker  # the integration suite's session fixture


def test_needs_the_broker(broker):
    pass
'''


def test_when_the_embedded_broker_cannot_start_then_the_tests_that_need_it_fail_not_skip(tmp_path: Path) -> None:
    # A run on the integration suite's own broker fixture, with the broker binary pointed at nothing.
    test_file = tmp_path / "test_needs_broker.py"
    test_file.write_text(NEEDS_BROKER.format(conftest=str(REPO / "tests" / "integration" / "conftest.py")))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["DEID_TANSU_BIN"] = str(tmp_path / "no-such-tansu")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
         "-c", str(REPO / "pyproject.toml"), "--rootdir", str(REPO), "--basetemp", str(tmp_path / "basetemp"),
         str(test_file)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "1 error" in out and "skipped" not in out.lower(), out[-3000:]
    assert "embedded broker did not start (FileNotFoundError)" in out, out[-3000:]
    assert str(tmp_path / "basetemp") in out  # the broker log's path is named
