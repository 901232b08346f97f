"""IR dialects of axisflow, one module per dialect."""
