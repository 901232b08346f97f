"""Lowering scheduled forests to standard MLIR: the pure plan (``plan``) and the deterministic inputs and printed results of the generated ``main`` (``harness``)."""
