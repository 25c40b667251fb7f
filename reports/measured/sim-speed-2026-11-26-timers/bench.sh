#!/bin/bash
# interleaved base/new timing: bench.sh NODES RUNS STRATEGY...
N=$1; RUNS=$2; shift 2
for s in "$@"; do for i in $(seq $RUNS); do for b in base new; do
  BIN=/tmp/dmuon-sim-base; [ $b = new ] && BIN=/tmp/dmuon-sim-new
  /usr/bin/time -f "%e %M" -o /tmp/ident/time.txt $BIN --scenario scenarios/16node.yaml --strategy $s --sweep nodes=$N --parallel 1 --json /tmp/ident/b.json >/dev/null 2>&1
  python3 -c "
import json;d=json.load(open('/tmp/ident/b.json'));x=d['runs'][0]['strategies'][0];w,m=open('/tmp/ident/time.txt').read().split()
print('$N $s $b $i', round(x['plan_wall_seconds'],2), round(x['sim_wall_seconds'],2), w, round(int(m)/1048576,3), x['step_seconds'])"
done; done; done
