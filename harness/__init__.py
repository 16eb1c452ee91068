"""The conformance harness: adapter contract, client loading, pytest plugin, reports."""
