#!/bin/bash
# One device call for issue 16's whole-model Newton-Schulz figures: build the GPU targets, run the
# sm_90a kernel's and the NS engine's GPU tests, `dmuon-bench sym-gemm` (X X^T and B = c A A + b A,
# the kernel against cuBLAS side by side), torch.optim.Muon's NS on every shape of Qwen2.5-3B and
# Llama-3-8B (harness/tools/torch_ns_baseline.py) and `dmuon-bench kernels` on the same shapes in
# the same call (whole_model_speedup_vs_torch), then `dmuon-verify --backend cuda` (every NS
# implementation against the reference). Run from the repository root on the GPU machine with
# $OUT set; needs .boost-po carried along. Writes $OUT/{sym-gemm,kernels}.md, kernels.json,
# torch.json, verify-cuda.json and the tests' output.
OUT=${OUT:?set OUT}
set -o pipefail; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u
source harness/tools/device_configure.sh; device_configure . >/dev/null 2>&1 && cmake --build build-dev -j16 --target dmuon-verify dmuon-bench test_gpu_sym_gemm test_gpu_ns_engine > $OUT/build.txt 2>&1 || { tail -50 $OUT/build.txt; exit 1; }
date -u; for t in test_gpu_sym_gemm test_gpu_ns_engine; do timeout 200 ./build-dev/tests/$t > $OUT/$t.txt 2>&1; echo "$t exit $?"; tail -2 $OUT/$t.txt; done
timeout 200 ./build-dev/harness/dmuon-bench sym-gemm --report-md $OUT/sym-gemm.md > $OUT/sym.txt 2>&1; echo sym $?; grep "^|" $OUT/sym-gemm.md | cut -d'|' -f2-9
MODELS="--model scenarios/models/qwen2.5-3b.yaml --model scenarios/models/llama3-8b.yaml --shapes 8192x28672"
SHAPES=$(./build-dev/harness/dmuon-bench kernels $MODELS --print-shapes); date -u
python3 harness/tools/torch_ns_baseline.py --shapes "$SHAPES" --out $OUT/torch.json > $OUT/torch.txt 2>&1; echo torch $?
./build-dev/harness/dmuon-bench kernels $MODELS --torch-json $OUT/torch.json --tune-cache $OUT/tune.json --report-md $OUT/kernels.md --report-json $OUT/kernels.json > $OUT/kernels.txt 2>&1; echo kernels $?; date -u
grep -iE "whole-model" $OUT/kernels.md | head -8
grep -E "^\| [0-9]+x[0-9]+ " $OUT/kernels.md | cut -d'|' -f2,5,6,7,8,12 | cut -c1-200
timeout 200 ./build-dev/harness/dmuon-verify --backend cuda --json $OUT/verify-cuda.json > $OUT/verify.txt 2>&1; echo verify $?; tail -1 $OUT/verify.txt; date -u
