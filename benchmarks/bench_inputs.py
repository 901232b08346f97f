"""What checking the user's tensors costs (axisflow.execution.read_inputs).

The proto-symmetry check contracts every other axis of a tensor with a
random vector: one pass over the data; the finite check of a NumPy array
is another (``numpy.isfinite`` slab by slab). Measured here on a composite
tensor ``C{a<i,i>;μ̃}`` of 61 MiB (a<2>=40, μ̃=500, i=20) beside
``E{b<i>;μ̃}``, against NumPy's own one pass over the same array
(``numpy.sum``) and against reading without the symmetry check
(``assume_symmetric=True``: the finite check alone), in one run, best of
15; then the same tensor as a Dask array in chunks of 8 MiB (its symmetry
checked; its values are checked finite when the run reads it).

Run: .venv/bin/python benchmarks/bench_inputs.py   (or make bench)
"""

from __future__ import annotations

from typing import Any

import dask.array
import numpy as np
from timing import best_of  # benchmarks/timing.py

from axisflow.execution import read_inputs

TEXT = "C{a_1<i_1,i_2>;μ̃_1} * E{b_1<i_1>;μ̃_1}"
RUNS = 15


def main() -> None:
    rng = np.random.default_rng(0)
    c = rng.standard_normal((40, 500, 20, 20))
    c = (c + c.transpose(0, 1, 3, 2)) / 2
    e = rng.standard_normal((30, 500, 20))
    inputs = {"C": c, "E": e}
    checked, _ = best_of(RUNS, lambda: read_inputs(TEXT, inputs))
    unchecked, _ = best_of(
        RUNS, lambda: read_inputs(TEXT, inputs, assume_symmetric=True)
    )
    one_pass, _ = best_of(RUNS, lambda: float(np.sum(c)))
    chunks: Any = (5, 500, 20, 20)  # dask leaves `chunks` unannotated
    lazy = {"C": dask.array.from_array(c, chunks=chunks), "E": e}
    lazy_checked, _ = best_of(3, lambda: read_inputs(TEXT, lazy))
    print(f"C{{a<i,i>;μ̃}}: {c.nbytes / 2**20:.0f} MiB, best of {RUNS}")
    print(f"  read_inputs, every check:       {checked * 1e3:7.1f} ms")
    print(f"  read_inputs, assume_symmetric:  {unchecked * 1e3:7.1f} ms (finite check)")
    print(f"  numpy.sum(C), one pass:         {one_pass * 1e3:7.1f} ms")
    print(f"  every check / one pass:         {checked / one_pass:7.1f}")
    print(f"  finite check / one pass:        {unchecked / one_pass:7.1f}")
    print(f"  as a Dask array, checked:       {lazy_checked * 1e3:7.1f} ms (best of 3)")


if __name__ == "__main__":
    main()
