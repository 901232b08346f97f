"""Module passes of axisflow, one module per pass, named after it."""
