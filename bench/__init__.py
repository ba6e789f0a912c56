"""Benchmarks: each module measures our path against an anchor in the same run (see README)."""
