#!/usr/bin/python3
"""One row per big run of run_big.sh: gpus,strategy,tag,wall_s,rss_kB,plan_s,sim_s,simulated_gpus,cpu_s.
Run from the repository root: /usr/bin/python3 reports/measured/sim-speed-2026-11-27-l07/big/summarize.py"""
import glob, json, os, re

out_dir = os.path.dirname(os.path.abspath(__file__))
rows = []
for tv in sorted(glob.glob(os.path.join(out_dir, "*.time-v.txt"))):
    name = os.path.basename(tv)[: -len(".time-v.txt")]
    m = re.match(r"(.+)-(\d+)-(before|after)$", name)
    if not m:
        continue
    strategy, gpus, tag = m.group(1), int(m.group(2)), m.group(3)
    text = open(tv).read()
    found = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text)
    if not found:  # still running
        continue
    wall = found.group(1)
    wall_s = 0.0
    for part in wall.split(":"):
        wall_s = wall_s * 60 + float(part)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
    cpu = float(re.search(r"User time \(seconds\): (\S+)", text).group(1)) + float(
        re.search(r"System time \(seconds\): (\S+)", text).group(1))
    plan = sim = simulated = ""
    try:
        s = json.load(open(os.path.join(out_dir, name + ".json")))["runs"][0]["strategies"][0]
        plan, sim, simulated = s["plan_wall_seconds"], s["sim_wall_seconds"], s.get("simulated_gpus", "")
    except (OSError, KeyError, ValueError):
        pass
    rows.append((gpus, strategy, tag, wall_s, rss, plan, sim, simulated, cpu))
order = ["adamw", "ddp-redundant", "fsdp-gather", "zero1-a2a", "dedicated", "owner-striped"]
rows.sort(key=lambda r: (r[0], order.index(r[1]) if r[1] in order else 9, r[2] != "before"))
with open(os.path.join(out_dir, "timings-big.csv"), "w") as f:
    f.write("gpus,strategy,tag,wall_s,rss_kB,plan_s,sim_s,simulated_gpus,cpu_s\n")
    for r in rows:
        f.write(",".join(str(x) for x in r) + "\n")
for r in rows:
    print(*r)
