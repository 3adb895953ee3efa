"""Every figure headprune draws, built once with plotly: plain data in (numpy arrays, the dicts the core's results
are), a :class:`plotly.graph_objects.Figure` out, no Streamlit. The dashboard's views, the HTML report and
handout (:mod:`headprune_core.reports`) and a notebook all draw with these functions, so a figure has one
definition (docs/notebook.md shows a notebook drawing the dashboard's figures from the cache).

Why here, a layer of the core above ``findings``: the figures read the core's results (the Findings cards, the
curves' dicts) and use its helpers (clustering, interval text), so they sit above the layers that compute them;
the report and the handout, written by the ``headprune report`` command, draw them, so they must be in the core,
below ``reports`` and the CLI, not in the app. The layers that compute (``findings`` and below) never import
plotly, and nothing in the core imports streamlit: the import-linter contracts in pyproject.toml say so. plotly is
the ``app`` extra's: a plain install reads and computes without it and needs it only to draw.

* :mod:`~headprune_core.figures.heads`: importance maps, the languages' agreement, layer profile, mask grid,
  attention;
* :mod:`~headprune_core.figures.curves`: pruning curves, re-fine-tuning, layer thirds;
* :mod:`~headprune_core.figures.affinity`: task affinity, GradTS selection and validation, shared heads;
* :mod:`~headprune_core.figures.cards`: the Findings cards, one by one and all on one scale;
* :mod:`~headprune_core.figures.embed`: figures in a self-contained HTML file (plotly.js inline).
"""
