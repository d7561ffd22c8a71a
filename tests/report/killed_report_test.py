#!/usr/bin/env python3
"""gpuaccept-report killed while a reader child is stuck in libhdf5 (issue 39).

The report reads each results file in a forked child with a time limit that the report
enforces. Killed itself (Slurm's time limit: SIGTERM then SIGKILL; scancel; Ctrl-C: SIGINT)
while a child looped in libhdf5 on a damaged file, the report used to leave that child
spinning a CPU with no limit. Now the child dies with its parent (PR_SET_PDEATHSIG).

The test damages copies of the fixture's smoke.h5 as damaged_files_test.py does (same
mutations, fixed seed) until one makes libhdf5 loop (the report, with a short reader limit,
says the reader "did not finish within" it). Then, for each signal, it runs the report on
that file with a long reader limit in a session of its own, waits until the report's child
has spent a second of CPU inside the read, signals the report alone, and checks that nothing
of that session is left running within 5 s.

Usage: killed_report_test.py REPORT_BIN FIXTURE_BIN WORK_DIR [--seed S] [--search N]
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from damaged_files_test import file_entries, mutate  # noqa: E402  the same damage as issue 18's test

TICKS = os.sysconf("SC_CLK_TCK")


def stat_fields(pid):
    """/proc/PID/stat after the command name: [state, ppid, pgrp, session, ...], or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def cpu_seconds(fields):
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def live_in_session(sid):
    """Pids of the processes of session `sid` that still run (zombies have ended)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            f = stat_fields(name)
            if f and int(f[3]) == sid and f[0] != "Z":
                out.append(int(name))
    return out


def children(pid):
    return [int(n) for n in os.listdir("/proc") if n.isdigit() and (stat_fields(n) or [0, "0"])[1] == str(pid)]


def find_looping_file(args, source, env):
    """Bytes of a damaged smoke.h5 on which libhdf5 loops, and the case's description."""
    original = open(os.path.join(source, "smoke.h5"), "rb").read()
    rng = random.Random(args.seed)
    for i in range(args.search):
        data, what = mutate(original, rng)
        d = os.path.join(args.work, "search")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        with open(os.path.join(d, "smoke.h5"), "wb") as f:
            f.write(data)
        done = subprocess.run([args.report, d, "--out", d, "--no-history"], env=dict(env, GPUACCEPT_READ_TIMEOUT="2"),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        if done.returncode == 2:  # unusable input (no thresholds directory, ...): no case would tell
            sys.exit(f"FAIL: the report refused its input:\n{done.stdout.decode(errors='replace')}")
        try:
            with open(os.path.join(d, "summary.json"), encoding="utf-8") as f:
                entries = file_entries(json.load(f), "smoke.h5")
        except (OSError, ValueError):
            continue
        if entries and "did not finish within" in entries[0][1].get("problem", ""):
            print(f"case {i} makes libhdf5 loop: {what}")
            return data
    sys.exit(f"FAIL: none of {args.search} damaged copies (seed {args.seed}) made libhdf5 loop: nothing to test")


def kill_while_reading(args, run_dir, env, sig):
    """Problems ([] when none) after signalling the report while its reader loops."""
    with open(os.path.join(run_dir, f"out-{sig.name}.txt"), "wb") as out:
        report = subprocess.Popen([args.report, run_dir, "--out", run_dir, "--no-history"], stdout=out,
                                  stderr=subprocess.STDOUT, env=dict(env, GPUACCEPT_READ_TIMEOUT="120"),
                                  start_new_session=True)
    sid = report.pid
    try:
        reader, deadline = None, time.monotonic() + 30
        while time.monotonic() < deadline:
            kids = children(report.pid)
            f = stat_fields(kids[0]) if kids else None
            if f and cpu_seconds(f) >= 1.0:
                reader = kids[0]
                break
            if report.poll() is not None:
                return [f"the report ended (exit {report.returncode}) before its reader had looped a second"]
            time.sleep(0.05)
        if reader is None:
            return ["no reader child spent a second of CPU within 30 s"]
        os.kill(report.pid, sig)
        report.wait(timeout=30)
        deadline = time.monotonic() + 5
        while live_in_session(sid) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = live_in_session(sid)
        if left:
            return [f"{len(left)} process(es) of the report's session still running 5 s after {sig.name}: {left} "
                    f"(the reader was {reader})"]
        print(f"{sig.name}: the report ended ({report.returncode}), its reader {reader} with it")
        return []
    finally:
        for pid in live_in_session(sid):  # never leave a spinning process behind the test itself
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if report.poll() is None:
            report.kill()
            report.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("fixture")
    ap.add_argument("work")
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--search", type=int, default=300, help="damaged copies to try for one that loops")
    args = ap.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    source = os.path.join(args.work, "source")
    subprocess.run([args.fixture, source], check=True, stdout=subprocess.DEVNULL)
    env = dict(os.environ)
    looping = find_looping_file(args, source, env)
    run_dir = os.path.join(args.work, "run")
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, "smoke.h5"), "wb") as f:
        f.write(looping)

    problems = []
    for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
        problems += kill_while_reading(args, run_dir, env, sig)
    for p in problems:
        print("FAIL:", p)
    if problems:
        return 1
    print("PASS: no process outlived the killed report")
    return 0


if __name__ == "__main__":
    sys.exit(main())
