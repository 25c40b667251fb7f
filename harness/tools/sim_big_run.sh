# One dmuon-sim run of 16node.yaml at NODES x 8 GPUs, one strategy alone (--parallel 1), under
# /usr/bin/time -v: OUT/STRATEGY-GPUS-TAG.{json,txt,time-v.txt}, and a line in OUT/order.txt.
# Sourced by the big-run scripts under reports/measured/ (run from the repository root):
#   big_run OUT TAG DMUON_SIM STRATEGY NODES
big_run() {
  local out=$1 tag=$2 bin=$3 s=$4 n=$5 gpus=$(( $5 * 8 ))
  echo "$(date -u +%H:%M:%S) $tag $s $gpus" >> "$out/order.txt"
  /usr/bin/time -v "$bin" --scenario scenarios/16node.yaml --strategy "$s" --sweep "nodes=$n" --parallel 1 \
     --json "$out/$s-$gpus-$tag.json" > "$out/$s-$gpus-$tag.txt" 2> "$out/$s-$gpus-$tag.time-v.txt"
}
