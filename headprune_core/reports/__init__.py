"""Documents to hand out, each one self-contained HTML file that opens from disk offline: the findings report
(every card with its chart) and a lesson's handout (each step's notes and its view's figure from the cache).
Their figures are the dashboard's (:mod:`headprune_core.figures`), embedded as plotly's JSON with plotly.js
inline; this layer writes the pages around them and imports no plotly itself."""
