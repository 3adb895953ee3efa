"""What is done with an encoder: fine-tuning, scoring heads, evaluating under a mask and pruning curves, learned
pruning, the AUTOSEM bandit, comparing head maps, and bootstrap uncertainty. Plain functions on models and
batches; nothing here knows about the cache."""
