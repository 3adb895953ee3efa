"""The papers' claims checked on the cached results of a plan: one card per claim, with a verdict."""
