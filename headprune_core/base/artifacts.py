"""Kinds of artifact the store writes in a format of their own (everything else is an array or JSON)."""


class Weights(dict):
    """A state dict (name -> tensor), stored as a safetensors file (never pickled)."""
