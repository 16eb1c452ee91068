"""Report paths: checked before any case runs, creating nothing; written without a traceback."""

import os
from pathlib import Path

import pytest

from mcp_host_conformance.harness.reports.report_files import destination_problem, write_report


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize(
    "relative, makes_directories, said",
    [
        ("missing/report.json", False, "the directory"),
        ("a-file/report.json", False, "is not a directory"),
        ("a-dir", False, "it is a directory"),
        ("a-file/deeper/junit.xml", True, "is not a directory"),
    ],
    ids=["no-directory", "file-as-directory", "a-directory", "junit-under-a-file"],
)
def test_a_path_that_cannot_be_written_is_named_and_nothing_is_made(
    tmp_path, relative, makes_directories, said
):
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "a-dir").mkdir()
    before = listing(tmp_path)
    problem = destination_problem(str(tmp_path / relative), makes_directories=makes_directories)
    assert problem is not None and said in problem and "\n" not in problem
    assert listing(tmp_path) == before


@pytest.mark.parametrize("relative", ["report.json", "a-dir/report.json", "new/dirs/junit.xml"])
def test_a_writable_path_passes_and_nothing_is_made(tmp_path, relative):
    (tmp_path / "a-dir").mkdir()
    before = listing(tmp_path)
    makes = relative.startswith("new/")
    assert destination_problem(str(tmp_path / relative), makes_directories=makes) is None
    assert listing(tmp_path) == before


def test_an_empty_path_is_an_unset_variable():
    assert "is empty" in destination_problem("")
    assert "is empty" in destination_problem("  ")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_a_directory_without_write_permission(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert "is not writable" in destination_problem(str(locked / "report.json"))


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_full_disk_is_said_not_raised():
    assert destination_problem("/dev/full") is None  # looks writable beforehand
    assert write_report("/dev/full", "{}" * 100_000) == os.strerror(28)  # ENOSPC


def test_a_report_cut_short_is_removed(tmp_path, monkeypatch):
    """The disk fills mid-write: no half report is left behind to be read as the run's."""
    target = tmp_path / "r.json"
    real = Path.write_text

    def fills_up(self, text, *args, **kwargs):
        real(self, text[:10], *args, **kwargs)
        raise OSError(28, os.strerror(28))

    monkeypatch.setattr(Path, "write_text", fills_up)
    assert write_report(str(target), "{}" * 100) == os.strerror(28)
    assert not target.exists()
