"""The script `StdioMock.command` runs: the stdio mock (`stdio_server.main`), started cheaply.

A suite run starts the stdio mock ~60 times, so its start is a sizeable share of the run's
CPU. Two costs are avoided here, on the mock's own start only (importing `stdio_server`
elsewhere changes nothing):
- Python compiles a script at every start but caches the modules it imports, so this
  script is a few lines and the mock is imported (`stdio_server` compiled: ~6 ms a start);
- `dataclasses` imports `inspect` (with `ast`, `dis`, `tokenize`: ~15 ms a start) for one
  thing only, the generated docstring of a dataclass without one; every dataclass on the
  mock's path has a docstring, so `inspect` is bound to a module that imports the real one
  on first use (tests/mocks/test_stdio_hostile.py checks it stays unused).
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
# The folder holding the `mcp_host_conformance` package (see stdio_server._ROOT).
_ROOT = os.path.dirname(_HERE)
if os.path.basename(_ROOT) == "mcp_host_conformance":
    _ROOT = os.path.dirname(_ROOT)


# the module type, without importing `types` (annotations only, as on the rest of this path)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
else:
    ModuleType = type(sys)


class _OnFirstUse(ModuleType):
    """Stands for a standard module until an attribute is read, then imports it for real."""

    def __getattr__(self, attribute: str) -> object:
        name = self.__name__
        if sys.modules.get(name) is self:
            del sys.modules[name]
        real = __import__(name)
        sys.modules[name] = real
        self.__dict__.update(real.__dict__)
        return getattr(real, attribute)


def defer(name: str) -> None:
    """Bind `name`, a top-level module (`__import__` of a dotted name returns its package),
    to a stand-in importing it on first use (unless it is imported already)."""
    sys.modules.setdefault(name, _OnFirstUse(name))


def _start() -> int:
    # Run as a script, sys.path[0] is this folder; the package root is what the imports need
    # (`python -S`: no site-packages, so it is found from here, installed or not).
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == _HERE:
        sys.path[0] = _ROOT
    else:
        sys.path.insert(0, _ROOT)
    defer("inspect")
    from mcp_host_conformance.mocks.stdio_server import main

    return main()


if __name__ == "__main__":
    sys.exit(_start())
