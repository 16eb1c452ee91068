"""The run: finding and loading the client under test in-process or through its driver
command (`loader`, `driver`, `client_under_test`), hosts restarted in a process of their own
(`fresh_process`), the pool of worker processes forked after collection (`workers`), and what
a run started, removed however it ends (`cleanup`, `orphans`).

May import `contract`, `verdicts`, `sandbox` and `cases`.
"""
