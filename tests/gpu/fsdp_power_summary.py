#!/usr/bin/env python3
"""Per run of the fsdp-lora phase (all, single_gpu, node) over its timed steps, each GPU's mean
power, SM clock and the share of nvidia-smi samples with the power cap or a slowdown active.

  fsdp_power_summary.py SMI_CSV PHASE_LOG [TIMING_SKIP]

SMI_CSV: nvidia-smi --query-gpu=timestamp,index,power.draw,power.limit,clocks.sm,temperature.gpu,
clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,
clocks_event_reasons.sw_thermal_slowdown --format=csv,noheader,nounits (tests/gpu/fsdp_power.sh).
PHASE_LOG: the phase's output, each line prefixed with the epoch seconds it arrived. A run's
timed steps are those after its first TIMING_SKIP (default 3, the phase's): the window from
the line of step TIMING_SKIP to the line of its last step (each line is printed as its step ends).
"""
import collections
import datetime
import re
import statistics
import sys

STEP = re.compile(r"^(\d+\.\d+) .*\bstep (\d+)/(\d+) (\w+): ")


def run_windows(log_path, skip):
    """{label: (start, end)} of each run's timed steps; a label seen twice keeps its first run."""
    lines = collections.defaultdict(dict)
    for line in open(log_path, encoding="utf-8", errors="replace"):
        m = STEP.match(line)
        if m and "r0/" in line:
            t, step, total, label = float(m[1]), int(m[2]), int(m[3]), m[4]
            lines[label].setdefault(step, (t, total))
    windows = {}
    for label, steps in lines.items():
        total = max(s[1] for s in steps.values())
        if skip in steps and total in steps:
            windows[label] = (steps[skip][0], steps[total][0])
    return windows


def samples(csv_path):
    """(epoch seconds, gpu, power W, power limit W, SM MHz, temperature C, power cap, HW slowdown, thermal)."""
    out = []
    for line in open(csv_path, encoding="utf-8", errors="replace"):
        f = [x.strip() for x in line.split(",")]
        if len(f) < 9:
            continue
        try:
            t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()  # local time, as date
            out.append((t, int(f[1]), float(f[2]), float(f[3]), float(f[4]), float(f[5]),
                        f[6] == "Active", f[7] == "Active", f[8] == "Active"))
        except ValueError:
            continue
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    skip = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    windows = run_windows(sys.argv[2], skip)
    data = samples(sys.argv[1])
    if not windows or not data:
        sys.exit(f"no timed steps in {sys.argv[2]} or no samples in {sys.argv[1]}")
    print("run         GPU  samples  power W (limit)  SM MHz  min SM  temp C  power cap  HW slowdown  thermal")
    for label, (t0, t1) in windows.items():
        by_gpu = collections.defaultdict(list)
        for s in data:
            if t0 <= s[0] <= t1:
                by_gpu[s[1]].append(s)
        for gpu in sorted(by_gpu):
            ss = by_gpu[gpu]
            share = lambda i: 100.0 * sum(s[i] for s in ss) / len(ss)
            print(f"{label:<11} {gpu:>3}  {len(ss):>7}  {statistics.mean(s[2] for s in ss):>7.0f} ({ss[0][3]:.0f})"
                  f"  {statistics.mean(s[4] for s in ss):>6.0f}  {min(s[4] for s in ss):>6.0f}"
                  f"  {statistics.mean(s[5] for s in ss):>6.0f}  {share(6):>8.0f}%  {share(7):>10.0f}%  {share(8):>6.0f}%")
        print(f"{label:<11} window {t1 - t0:.1f} s")


if __name__ == "__main__":
    main()
