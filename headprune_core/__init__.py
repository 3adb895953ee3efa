"""headprune: see, score and prune the attention heads of Transformer encoders, per language and task.

A plain library with a CLI (``python -m headprune_core --help``); it never imports streamlit.
"""

__version__ = "0.1.0"
