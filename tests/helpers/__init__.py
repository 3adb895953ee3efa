"""Helpers shared by the tests: tiny random encoders of each family, generated corpora and fixture caches, own-data
files, a local copy of a Hub repository, generated training rows, the dashboard driver (AppTest and Chromium)."""
