#!/bin/bash
# big runs: before (/tmp/pre, 3c3f3e5) and after (build, 5980daf)
cd /work/main
OUT=reports/measured/sim-speed-2026-11-27-templates/big
run() {  # tag bin strategy nodes
  local tag=$1 bin=$2 s=$3 n=$4 gpus=$(( $4 * 8 ))
  echo "$(date -u +%H:%M:%S) $tag $s $gpus" >> $OUT/order.txt
  /usr/bin/time -v $bin --scenario scenarios/16node.yaml --strategy $s --sweep nodes=$n --parallel 1 \
     --json $OUT/$s-$gpus-$tag.json > $OUT/$s-$gpus-$tag.txt 2> $OUT/$s-$gpus-$tag.time-v.txt
}
for n in 256 512; do
  for s in dedicated owner-striped; do
    run before /tmp/pre/build/harness/dmuon-sim $s $n
    run after build/harness/dmuon-sim $s $n
  done
done
for s in dedicated owner-striped; do
  run after build/harness/dmuon-sim $s 1024
  run before /tmp/pre/build/harness/dmuon-sim $s 1024
done
echo "$(date -u +%H:%M:%S) done" >> $OUT/order.txt
