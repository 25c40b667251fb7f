#!/bin/bash
# Second call of a 1 x H100 lease (warm machine, build-dev from the calibration call): the eight step
# scenarios, the stand-in and the six compute-only runs, each in three processes.
set -o pipefail
OUT=${OUT:?}
S=scenarios/validation
date -u
PROCESSES=3 bash harness/tools/device_validate.sh steps $S/{qwen2-0.5b,qwen2.5-1.5b,qwen2.5-3b,llama3.2-3b}-{dmuon,torch}-1xh100.yaml > /dev/null
date -u
source harness/tools/median_reports.sh
mkdir -p /tmp/sp
for p in 1 2 3; do
  ./build-dev/harness/dmuon-bench step --scenario $S/qwen2-0.5b-dmuon-1xh100.yaml --ns-impl standard --warmup 2 \
    --iterations 10 --timeout 120 --out-dir /tmp/sp/p$p --machine standin-qwen2-0.5b-dmuon-1xh100-plain > /tmp/sp/log$p.txt 2>&1
  echo "standin p$p exit $?"
done
median_reports /tmp/sp/step-standin-qwen2-0.5b-dmuon-1xh100-plain.json /tmp/sp/p*/step-standin-qwen2-0.5b-dmuon-1xh100-plain.json
date -u
PROCESSES=3 bash harness/tools/device_validate.sh fsdp2 1 compute-only $S/{qwen2-0.5b,qwen2.5-1.5b,qwen2.5-3b,llama3.2-3b,llama3-8b,qwen2.5-7b}-torch-1xh100.yaml > /dev/null
tar czf $OUT/standin.tgz -C /tmp/sp .
grep -E "optimizer step|^== |exit [^0]" $OUT/run-steps.log | tail -30
tail -12 $OUT/run-fsdp2.log
date -u
ls $OUT
