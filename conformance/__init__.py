"""Conformance cases, one module per requirement area of the catalog."""
