"""mypy over the package as it is installed, its errors named by the repository's paths.

Strategy: the repository maps its top-level folders under `mcp_host_conformance`
(`package-dir` in pyproject.toml); mypy cannot follow that mapping (it reads folders, and an
editable install's import hook is invisible to it). So the parts are copied, as a wheel
would hold them, into a temporary folder, mypy checks `-p mcp_host_conformance` there with
the repository's configuration, and every path it prints is given back as the file in the
repository. Arguments are passed on to mypy (`--cache-dir DIR`, `--no-incremental`, ...).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
PACKAGE = "mcp_host_conformance"


def parts() -> dict[str, str]:
    sys.path.insert(0, str(REPOSITORY))
    from mcp_host_conformance import PARTS

    return dict(PARTS)


def lay_out(into: Path) -> dict[str, str]:
    """Copy the package's Python files into `into` as installed; returns installed path
    prefix -> repository path prefix."""
    mapping = {}
    package = into / PACKAGE
    package.mkdir()
    for name in ("__init__.py", "py.typed"):
        shutil.copy2(REPOSITORY / PACKAGE / name, package / name)
    mapping[str(package / "__init__.py")] = str(Path(PACKAGE) / "__init__.py")
    for part, folder in parts().items():
        source = REPOSITORY / folder
        shutil.copytree(
            source,
            package / part,
            ignore=shutil.ignore_patterns("__pycache__", "node_modules", "*.pyc"),
        )
        mapping[f"{package / part}{os.sep}"] = f"{Path(folder)}{os.sep}"
    return mapping


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="typecheck-") as folder:
        mapping = lay_out(Path(folder))
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "mypy",
                "--config-file",
                str(REPOSITORY / "pyproject.toml"),
                "-p",
                PACKAGE,
                *argv,
            ],
            cwd=folder,
            capture_output=True,
            text=True,
        )
        for stream, text in ((sys.stdout, done.stdout), (sys.stderr, done.stderr)):
            for installed, repository in sorted(mapping.items(), key=lambda m: -len(m[0])):
                relative = installed[len(folder) + 1 :]
                text = text.replace(installed, repository).replace(relative, repository)
            stream.write(text)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
