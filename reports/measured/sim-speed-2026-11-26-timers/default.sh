#!/bin/bash
cd /work/main
for i in 1 2 3; do for b in base new; do
  /usr/bin/time -f "%e %U %S %M" -o /tmp/ident/t.txt /tmp/dmuon-sim-$b --scenario scenarios/16node.yaml > /dev/null 2>&1
  echo "default $b $i $(cat /tmp/ident/t.txt) load $(cut -d' ' -f1 /proc/loadavg)"
done; done
