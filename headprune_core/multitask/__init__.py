"""Tasks together: GradTS task affinity and auxiliary-task selection checked by multi-task training, and the
heads many tasks keep (stem cells, He & Choi)."""
