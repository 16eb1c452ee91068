"""Rule monitors: every rule that can be stated over what the harness observes, checked after
every case of the suite, not only after the rule's own cases.

A monitor reads what a case made (`observed.Observed`: the servers' journals, the model's
requests, the moments of the harness's steps, the host's texts and files, the process
table) and returns `Finding`s; the plugin runs them all at the end of each case (`watch`),
and the report fails each finding's rule, naming the case that revealed it. The catalog of
monitors is `registry.MONITORS`; docs/monitors.md has the table of every rule, its monitor,
or why only a targeted case can check it.

May import `contract`, `verdicts`, `cases` and the mocks; not the run, the reports or the
plugin.
"""
