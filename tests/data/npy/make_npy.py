#!/usr/bin/python3
"""Writes the .npy fixtures of tests/test_npy.cpp with NumPy itself, in C and Fortran order.

    /usr/bin/python3 tests/data/npy/make_npy.py      # rewrites the files beside this script

For every rank r in 1, 2, 3 (shapes SHAPES[r]) and dtype float32 / float64 it writes
    {r}d_{f32|f64}_c.npy   numpy.save of the C-contiguous array
    {r}d_{f32|f64}_f.npy   numpy.save of the same array made F-contiguous (fortran_order True)
Element (i0, i1, ...) of every array holds  expected(i) = 100*i0 + 10*i1 + i2 + 1/3  computed in
float64 (missing indices are 0), then rounded to float32 for the f32 files: each value names its
own index, so a reader that mixes up the two orders reads wrong values, not merely a permutation
that a sum would miss. tests/test_npy.cpp computes the same expected values.

numpy.save writes fortran_order False for any 1-d array (it is C-contiguous too), so the 1-d
Fortran files are written by numpy.lib.format's own header writer with fortran_order True and the
array's bytes, which is what numpy.save would write; numpy.load reads every file back here.
Written with NumPy 1.24.2 (Debian 12 python3-numpy).
"""
import os

import numpy as np
from numpy.lib import format as npformat

SHAPES = {1: (5,), 2: (3, 4), 3: (2, 3, 4)}
DTYPES = {"f32": np.float32, "f64": np.float64}


def expected(shape):
    """float64 array of `shape` with element (i0, i1, i2) = 100*i0 + 10*i1 + i2 + 1/3."""
    index = np.indices(shape, dtype=np.float64)
    weights = (100.0, 10.0, 1.0)[: len(shape)]
    value = np.zeros(shape, dtype=np.float64)
    for w, i in zip(weights, index):
        value = value + w * i
    return value + 1.0 / 3.0


def save_fortran_1d(path, array):
    with open(path, "wb") as f:
        npformat.write_array_header_1_0(
            f, {"descr": npformat.dtype_to_descr(array.dtype), "fortran_order": True, "shape": array.shape})
        f.write(array.tobytes(order="F"))


def fortran_flag(path):
    with open(path, "rb") as f:
        npformat.read_magic(f)
        _, fortran_order, _ = npformat.read_array_header_1_0(f)
    return fortran_order


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for rank, shape in SHAPES.items():
        for tag, dtype in DTYPES.items():
            a = expected(shape).astype(dtype)
            for order in ("c", "f"):
                path = os.path.join(here, f"{rank}d_{tag}_{order}.npy")
                if order == "c":
                    np.save(path, np.ascontiguousarray(a), allow_pickle=False)
                elif rank == 1:
                    save_fortran_1d(path, a)
                else:
                    np.save(path, np.asfortranarray(a), allow_pickle=False)
                back = np.load(path, allow_pickle=False)
                assert fortran_flag(path) == (order == "f"), path
                assert back.dtype == dtype and back.shape == shape and np.array_equal(back, a), path
                print(f"{os.path.basename(path)}: shape {shape}, {np.dtype(dtype).name}, "
                      f"fortran_order {order == 'f'}, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
