"""The conformance harness, in rooms by concern. Lower rooms never import higher ones
(tests/test_import_graph.py checks it); from the bottom up:

- `contract`: what a host implements: the adapter contract (`contract.adapter`) and the
  driver protocol for hosts in other processes or languages (its values, its JSON-RPC
  peer, and the Python side that serves an adapter over it).
- `verdicts`: what is judged and how it is said: the requirements catalog, the outcome
  vocabulary and `check`/`precondition`, the expected-failures baseline, host text made safe
  to print.
- `sandbox`: the sealed network a run may live in: the namespace, its name server, its
  listeners on remote and private addresses.
- `cases`: what a conformance case uses: the host it drives (`Host`, `Running`), what it may
  rely on from mocks, ready server specs, the readers of journals and model requests, canary
  secrets, a pseudo-terminal, and what a case is seen from pytest.
- `run`: the run itself: finding and loading the client under test (in-process or through
  its driver command), restarted hosts, the forked worker pool, and the cleanup of what a
  run started.
- `reports`: the run's results as a terminal summary, JSON, JUnit properties and HTML.
- `oauth`: OAuth as a run meets it: the official framework's auth scenarios driven through
  the adapter, an OAuth-protected mock, a headless browser stand-in, and the watch on what a
  host asks a browser to open.
- `plugin`: the pytest plugin (options, markers, fixtures) that puts the rooms together.
- `cli`: `mcp-host-conformance`, above everything.

The catalog itself is data (`data/requirements.md`), as is the official framework's runner.
"""
