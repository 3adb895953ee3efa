"""Encoders and their attention heads: loading (embedded, local, Hub), the architecture adapters, head gates and
physical pruning, task classifiers on top, pruned-model folders, timing, and per-sentence inspection."""
