#!/bin/bash
# One device call that splits the overlapped epilogue's measured loss (stop 48) into its two parts:
# the ring's lost fourth stage and the storer warps' hand-off. Builds dmuon-bench as the tree is
# (inline on 4 stages) and keeps a copy of it (the binary links our libraries statically), then sets
# DMUON_SYM_INLINE_STAGES to 3 in this machine's copy of kernels/cuda/sym_gemm_kernel.cuh and rebuilds
# (only the sm_90a kernel's file recompiles): the inline epilogue on the overlapped one's 3 stages.
# Then times `dmuon-bench sym-gemm` (X X^T and c A^2 + b A) as inline-4, inline-3 and overlap,
# alternating, three rounds. The overlap instance is the same code in both builds.
# Run from the repository root on the GPU machine with $OUT set and .boost-po carried:
#   bash harness/tools/device_ring_depth_ab.sh
set -o pipefail
source harness/tools/device_configure.sh
device_start
fail() { tail -30 /tmp/b.txt | tee -a "$LOG"; say "BUILD FAILED"; exit 1; }
{ device_configure . && timeout 300 cmake --build build-dev -j16 --target dmuon-bench; } > /tmp/b.txt 2>&1 || fail
cp build-dev/harness/dmuon-bench /tmp/bench-inline4
say "built inline-4"
hdr=kernels/cuda/sym_gemm_kernel.cuh
grep -q "^#define DMUON_SYM_INLINE_STAGES 4$" $hdr || { say "no DMUON_SYM_INLINE_STAGES 4 in $hdr"; exit 1; }
sed -i 's/^#define DMUON_SYM_INLINE_STAGES 4$/#define DMUON_SYM_INLINE_STAGES 3/' $hdr
timeout 200 cmake --build build-dev -j16 --target dmuon-bench > /tmp/b.txt 2>&1 || fail
cp build-dev/harness/dmuon-bench /tmp/bench-inline3
say "built inline-3"
SHAPES=4096x14336,4096x4096,2048x11008
for round in 1 2 3; do
  for v in inline4 inline3 overlap; do
    case $v in
      inline4) bin=/tmp/bench-inline4; mode=inline ;;
      inline3) bin=/tmp/bench-inline3; mode=inline ;;
      overlap) bin=/tmp/bench-inline4; mode=overlap ;;
    esac
    DMUON_SYM_EPILOGUE=$mode timeout 60 $bin sym-gemm --shapes $SHAPES --dtype fp16 --repeats 30 > /tmp/ab.txt 2>&1
    echo "-- fp16 $v round $round exit $?" | tee -a "$LOG"; grep -E "^\| [0-9]" /tmp/ab.txt | cut -d'|' -f2-7 | tee -a "$LOG"
  done
done
say "done"
