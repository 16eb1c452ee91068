"""What a conformance case uses: the host it drives (`hostrun.Host`, `Running`: every adapter
call bounded, everything the user saw recorded), what it may rely on from any mock
(`mock_contract`), ready server specs (`specs`), the readers of journals and model requests
(`observe`, `profile_support`), canary secrets (`canaries`), FLAG-1's corpus
(`injection_corpus`), a pseudo-terminal (`pty_session`), and what a case is, seen from pytest
(`items`).

May import `contract`, `verdicts` and the mocks; not the run, the reports or the plugin.
"""
