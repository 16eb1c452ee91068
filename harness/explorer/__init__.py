"""The scenario explorer: generated sessions that visit what no case lists.

A case checks its rule where its author looked; a host's bug often sits beside that point
(the unhappy path, a sequence instead of one event, a second server, a slow answer). The
explorer drives a host through generated scenarios over a catalogue of dimensions
(`dimensions`: servers, tools, timing, failures, model turns, the person's answers,
secrets, the host's environment), checks every rule monitor after every step, shrinks a
violation to the shortest scenario that still shows it (`shrink`) and writes it as a file
that replays with the same verdict (`scenario`, `explore --replay`).

Strategy: a scenario is data (`scenario.Scenario`), generated from a seed with each
dimension's least-visited values first (`generate`), run on a fresh `Case` of its own
(`world`). Being data, it is printed, saved, replayed and shrunk without any generator
state; steering by visits reaches every value of the catalogue within a small budget and
reports how often each was visited. Shrinking is ours, not hypothesis's: a scenario runs a
real host for seconds, and the shrinker must stop within the run's budget and keep the
same rule and monitor, which hypothesis's unbounded shrink of its choice sequence does not
promise. docs/explorer.md has the catalogue and the method.

The top room: may import every other room of the harness (it runs cases' hosts with the
plugin's `Case` and the monitors); nothing imports it but the command line and the suite's
explorer case.
"""
