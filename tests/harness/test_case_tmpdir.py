"""Where the case fixture puts its temp dirs (mcp_host_conformance.harness.fixtures.case_tmpdir)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_host_conformance.harness import fixtures


def test_the_environment_variable_wins(tmp_path: Path) -> None:
    assert fixtures.case_tmpdir({fixtures.TMPDIR_ENV: str(tmp_path)}) == str(tmp_path)


def test_no_shm_falls_back_to_the_system_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(fixtures, "_SHM", tmp_path / "absent")
    assert fixtures.case_tmpdir({}) is None


def test_a_small_tmpfs_is_not_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(fixtures, "_SHM", tmp_path)
    monkeypatch.setattr(fixtures, "_SHM_MIN_FREE", 1 << 62)
    assert fixtures.case_tmpdir({}) is None


def test_a_roomy_writable_dir_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(fixtures, "_SHM", tmp_path)
    monkeypatch.setattr(fixtures, "_SHM_MIN_FREE", 0)
    assert fixtures.case_tmpdir({}) == str(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_a_read_only_dir_is_not_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(fixtures, "_SHM", tmp_path)
    monkeypatch.setattr(fixtures, "_SHM_MIN_FREE", 0)
    tmp_path.chmod(0o500)
    try:
        assert fixtures.case_tmpdir({}) is None
    finally:
        tmp_path.chmod(0o700)
