"""Linear (Mahalanobis) metric learning on UCI-style tabular data: LANML, PNCA and their baselines."""
