"""The sealed network: a private network namespace for the run and everything it starts
(`network`), its name server for the names cases use (`dns_stub`), and its listeners on
remote and private addresses (`remote`).

May import the mocks (a listener journals what reaches it); nothing else of the harness.
"""
