#!/usr/bin/python3
"""plot.csv for harness/tools/plot_sim_speed.py and the big-run table of reports/sim-speed.md:
timings.csv (128-1,024 GPUs) and the big runs (big/*.time-v.txt, 2,048-16,384 GPUs), with the final
code's ddp-redundant runs (one-task/*, a47ebe1) as its "after" past 2,048 GPUs, where ea40f53 ran
tasks per pair. Run from the repository root:
    /usr/bin/python3 reports/measured/sim-speed-2026-11-27-l07/plot_csv.py"""
import glob, json, os, re

here = os.path.dirname(os.path.abspath(__file__))


def timed(path):
    """(wall_s, rss_kB, cpu_s, exit status) from a /usr/bin/time -v file, None while running."""
    text = open(path).read()
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text)
    if not wall:
        return None
    s = 0.0
    for part in wall.group(1).split(":"):
        s = s * 60 + float(part)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
    cpu = sum(float(re.search(k + r" \(seconds\): (\S+)", text).group(1)) for k in ("User time", "System time"))
    rc = int(re.search(r"Exit status: (\d+)", text).group(1))
    return s, rss, cpu, rc


runs = {}  # (gpus, strategy, tag) -> row
for folder, final in (("big", False), ("one-task", True)):
    for tv in glob.glob(os.path.join(here, folder, "*.time-v.txt")):
        m = re.match(r"(.+)-(\d+)-(before|after|one-task)\.time-v\.txt$", os.path.basename(tv))
        t = timed(tv)
        if not m or not t:
            continue
        strategy, gpus, tag = m.group(1), int(m.group(2)), "after" if final else m.group(3)
        if tag == "after" and not final and strategy == "ddp-redundant" and gpus > 2048:
            continue  # tasks per pair (ea40f53); the final code's runs are in one-task/
        s = json.load(open(tv.replace(".time-v.txt", ".json")))["runs"][0]["strategies"][0]
        runs[(gpus, strategy, tag)] = [gpus, strategy, tag, 1, t[3], t[0], t[1], s["plan_wall_seconds"],
                                       s["sim_wall_seconds"], "", t[2], s.get("simulated_gpus", "")]
order = ["adamw", "ddp-redundant", "fsdp-gather", "zero1-a2a", "dedicated", "owner-striped"]
big = sorted(runs.values(), key=lambda r: (r[0], order.index(r[1]), r[2] != "before"))
with open(os.path.join(here, "plot.csv"), "w") as f:
    f.write("gpus,strategy,tag,run,rc,wall_s,rss_kB,plan_s,sim_s,load1,cpu_s\n")
    for line in open(os.path.join(here, "timings.csv")):
        if not line.startswith("gpus"):
            f.write(line)
    for r in big:
        f.write(",".join(str(x) for x in r[:11]) + "\n")


def wall(s):
    return f"{int(s // 60)} min {s % 60:.0f} s" if s >= 60 else f"{s:.1f} s"


print("| GPUs | strategy | wall before -> after | planning (s) | simulation (s) | simulated GPUs | peak RSS (GB) |")
print("| ---: | --- | --- | --- | --- | --- | --- |")
for (gpus, strategy, tag), a in sorted(runs.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]))):
    if tag != "after":
        continue
    b = runs.get((gpus, strategy, "before"))
    if b:
        print(f"| {gpus} | {strategy} | {wall(b[5])} -> **{wall(a[5])}** | {b[7]:.1f} -> {a[7]:.1f} | {b[8]:.1f} -> {a[8]:.1f} | "
              f"{a[11]} | {b[6] / 1e6:.2f} -> {a[6] / 1e6:.2f} |")
    else:
        print(f"| {gpus} | {strategy} | **{wall(a[5])}** | {a[7]:.1f} | {a[8]:.1f} | {a[11]} | {a[6] / 1e6:.2f} |")
