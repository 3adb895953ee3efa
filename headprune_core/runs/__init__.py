"""Runs through the cache: one frozen configuration per kind of run (its hash is the cache key), the store,
the Study that turns configurations into cached results, job lists with progress, and time estimates measured
from the cache."""
