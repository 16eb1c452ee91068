"""The pytest plugin that puts the rooms together: its hooks, options and markers (`hooks`,
the module pytest loads) and the fixtures cases use (`fixtures`).

The room at the top of the harness: it may import every other room; only the command
(`harness.cli`) names it. The hooks live in a module of their own, not here, so a process
may import the fixtures (the self-test's fork server does) without importing the plugin
before pytest's assertion rewriting is in place.
"""
