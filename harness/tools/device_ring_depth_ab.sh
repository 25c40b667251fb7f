#!/bin/bash
# One device call that splits the overlapped epilogue's measured loss (stop 48) into its two parts:
# the ring's lost fourth stage and the storer warps' hand-off. Builds dmuon-bench twice, the tree as
# it is (build-dev: inline on 4 stages) and with -DDMUON_SYM_INLINE_STAGES=3 (build-d3: inline on
# the overlapped epilogue's 3 stages), then times `dmuon-bench sym-gemm` (X X^T and c A^2 + b A)
# as inline-4, inline-3 and overlap, alternating, three rounds.
# Run from the repository root on the GPU machine with $OUT set and .boost-po carried:
#   bash harness/tools/device_ring_depth_ab.sh
set -o pipefail
source harness/tools/device_configure.sh
device_start
{ device_configure . && timeout 300 cmake --build build-dev -j8 --target dmuon-bench; } > /tmp/b4.txt 2>&1 &
pid4=$!
{ cmake -S . -B build-d3 -DCMAKE_BUILD_TYPE=Release -DDMUON_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_CUDA_FLAGS=-DDMUON_SYM_INLINE_STAGES=3 \
    -DBOOST_ROOT="$PWD/.boost-po" -DBoost_NO_SYSTEM_PATHS=ON -DBoost_USE_STATIC_LIBS=ON &&
  timeout 300 cmake --build build-d3 -j8 --target dmuon-bench; } > /tmp/b3.txt 2>&1 &
pid3=$!
wait $pid4; rc4=$?; wait $pid3; rc3=$?
[ $rc4 = 0 ] && [ $rc3 = 0 ] || { tail -30 /tmp/b4.txt /tmp/b3.txt | tee -a "$LOG"; say "BUILD FAILED"; exit 1; }
say "built"
SHAPES=4096x14336,4096x4096,2048x11008
for round in 1 2 3; do
  for v in inline4 inline3 overlap; do
    case $v in
      inline4) bin=build-dev; mode=inline ;;
      inline3) bin=build-d3; mode=inline ;;
      overlap) bin=build-dev; mode=overlap ;;
    esac
    DMUON_SYM_EPILOGUE=$mode timeout 60 ./$bin/harness/dmuon-bench sym-gemm --shapes $SHAPES --dtype fp16 \
      --repeats 30 > /tmp/ab.txt 2>&1
    echo "-- fp16 $v round $round exit $?" | tee -a "$LOG"; grep -E "^\| [0-9]" /tmp/ab.txt | cut -d'|' -f2-7 | tee -a "$LOG"
  done
done
say "done"
