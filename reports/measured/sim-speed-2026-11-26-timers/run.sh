#!/bin/bash
# usage: run.sh BIN TAG
BIN=$1; TAG=$2; D=/tmp/ident/$TAG; mkdir -p $D; cd /work/main
$BIN --scenario scenarios/16node.yaml --json $D/16node.json > /dev/null 2>&1
$BIN --scenario scenarios/16node.yaml --sweep nodes=2,32 --json $D/16node-sweep.json > /dev/null 2>&1
$BIN --scenario scenarios/16node.yaml --mode flows --strategy dedicated --strategy owner-striped --sweep nodes=2 --json $D/16node-flows.json > /dev/null 2>&1
for s in llama3-8b-16node-h100 qwen3-30b-a3b-16node 8xa800-llm; do $BIN --scenario scenarios/$s.yaml --json $D/$s.json > /dev/null 2>&1; done
$BIN --scenario scenarios/validation/qwen2.5-3b-dmuon-2xh100.yaml --calibration scenarios/calibration/h100-sxm-x2.yaml --json $D/cal-2xh100.json > /dev/null 2>&1
$BIN --scenario scenarios/validation/llama3-8b-dmuon-2xh200.yaml --calibration scenarios/calibration/h200.yaml --json $D/cal-2xh200.json > /dev/null 2>&1
$BIN --scenario scenarios/16node.yaml --calibration scenarios/calibration/h100-sxm-x2.yaml --sweep nodes=4 --json $D/16node-cal.json > /dev/null 2>&1
echo done $TAG
