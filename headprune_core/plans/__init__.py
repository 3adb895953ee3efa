"""What to compute: study plans and presets (each expands into cached jobs), plan lookup, and sweeps (grids of
plans run on Ray)."""
