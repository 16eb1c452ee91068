"""What a host implements to be tested: the adapter contract and the driver protocol.

`adapter` holds the records and protocols an in-process adapter implements; `driver_wire`,
`jsonrpc` and `driver_server` are the same contract on a wire (the values, the bounded
newline-delimited JSON-RPC peer, and the Python side that serves an adapter over stdio).
The lowest room: it imports no other part of the harness, nor the mocks.
"""
