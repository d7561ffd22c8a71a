#!/usr/bin/env python3
"""gpuaccept-report on damaged results files (issue 18).

Writes the fixture run (make_fake_run.cpp), then N run directories, each with a good
copy of one phase file and a mutated copy of the other (bit flips, truncation, zeroed
ranges, inserted bytes, random overwrites; a fixed seed, so a failure reproduces), and
runs the real gpuaccept-report binary on each with a time limit. Every case must end
with the report written:

  - never killed by a signal, never past the time limit;
  - an exit code of a verdict (0 PASS, 1 FAIL, 3 INCOMPLETE; 2 means no report);
  - report.html and summary.json written, summary.json parses;
  - the damaged phase is an ERROR naming its file, or was read in full (a harmless
    mutation: as many records as the original);
  - the good phase exactly as in the report on the undamaged files.

Usage: damaged_files_test.py REPORT_BIN FIXTURE_BIN WORK_DIR [--cases N] [--seed S]
       [--jobs J] [--limit SECONDS] [--survey]
--survey only counts the outcomes (to measure a build without the fix) and exits 0.
The reader's own limit inside the report is set with GPUACCEPT_READ_TIMEOUT (below the
harness's, so a hung reader shows up as an ERROR and not as a hung report).
"""
import argparse
import collections
import concurrent.futures
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

PHASES = ("smoke", "discover")  # the damaged phase of a case; the other stays good
VERDICT_CODES = {0, 1, 3}


def mutate(data: bytes, rng: random.Random):
    """One random kind of damage; returns (bytes, a description for the failure list)."""
    kind = rng.choice(["bitflip", "bitflip", "truncate", "zero", "insert", "overwrite"])
    b = bytearray(data)
    n = len(b)
    if kind == "bitflip":
        flips = rng.randint(1, 16)
        where = sorted(rng.randrange(n) for _ in range(flips))
        for i in where:
            b[i] ^= 1 << rng.randrange(8)
        return bytes(b), f"{kind} {flips} bits at {where[:4]}{'...' if flips > 4 else ''}"
    if kind == "truncate":
        keep = rng.randrange(n)
        return bytes(b[:keep]), f"{kind} to {keep} of {n} bytes"
    if kind in ("zero", "overwrite"):
        off = rng.randrange(n)
        length = min(rng.choice([1, 4, 8, 16, 64, 256, 2048]), n - off)
        b[off:off + length] = bytes(length) if kind == "zero" else rng.randbytes(length)
        return bytes(b), f"{kind} {length} bytes at {off}"
    off = rng.randrange(n)
    extra = rng.randbytes(rng.choice([1, 3, 8, 64, 512]))
    return bytes(b[:off]) + extra + bytes(b[off:]), f"insert {len(extra)} bytes at {off}"


def report(binary, run_dir, limit, env):
    """(outcome, rc) of one report run: outcome 'signal SIGSEGV', 'timeout' or 'exit'."""
    with open(os.path.join(run_dir, "out.txt"), "wb") as out:
        p = subprocess.Popen([binary, run_dir, "--out", run_dir], stdout=out, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
        try:
            rc = p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # its readers too, if any are left
            p.wait()
            return "timeout", None
    if rc < 0:
        return f"signal {signal.Signals(-rc).name}", rc
    return "exit", rc


def phase_view(summary, phase):
    """What the report made of one phase: its status, files and checks."""
    p = next((p for p in summary["phases"] if p["phase"] == phase), None)
    checks = [c for c in summary["checks"] if c["phase"] == phase]
    return p, checks


def file_entries(summary, file_name):
    """Every (phase, file entry) of summary.json whose path ends in file_name. Found by
    path, since a damaged 'phase' attribute files a readable file under another name."""
    return [(p, f) for p in summary["phases"] for f in p["files"] if os.path.basename(f["path"]) == file_name]


def reader_outcome(problem):
    """How the report's reader ended on the damaged file, from the file's problem text."""
    if "killed by SIG" in problem:
        return "reader killed by " + problem.split("killed by ")[1].split(" ")[0]
    if "did not finish within" in problem:
        return "reader past its time limit"
    if "is outside -1.." in problem:
        return "refused: a number out of bounds"
    return "refused by libhdf5 or the format checks"


def judge(case, summary_path, reference):
    """The problems with one finished case's report ([] when it is as required)."""
    damaged, good = case["damaged"], case["good"]
    try:
        with open(summary_path, encoding="utf-8") as f:
            s = json.load(f)
    except (OSError, ValueError) as e:
        return [f"summary.json unreadable: {e}"]
    problems = []
    file_name = f"{damaged}.h5"
    entries = file_entries(s, file_name)
    if len(entries) != 1:
        problems.append(f"{file_name} listed {len(entries)} times in summary.json")
    else:
        p, f = entries[0]
        case["read"] = reader_outcome(f["problem"]) if f["state"] == "unreadable" else "read in full"
        if f["state"] == "unreadable":
            named = any(c["status"] == "ERROR" and c["test"] == "result_file" and file_name in c["message"]
                        for c in s["checks"] if c["phase"] == p["phase"])
            if p["status"] != "ERROR" or not named:
                problems.append(f"{file_name} unreadable but its phase is not an ERROR naming it")
        elif f["records"] != reference[damaged]["records"]:
            problems.append(f"{file_name} read with {f['records']} records, "
                            f"expected {reference[damaged]['records']} or an ERROR")
    gp, gchecks = phase_view(s, good)
    if gp is None or [f["records"] for f in gp["files"]] != [reference[good]["records"]] or \
            gchecks != reference[good]["checks"]:
        problems.append(f"the good phase {good} differs from the report on undamaged files")
    return problems


def run_case(args, case, env):
    d = case["dir"]
    os.makedirs(d, exist_ok=True)
    for phase in PHASES:
        dst = os.path.join(d, f"{phase}.h5")
        if phase == case["damaged"]:
            with open(dst, "wb") as f:
                f.write(case["bytes"])
        else:
            shutil.copyfile(os.path.join(args.work, "source", f"{phase}.h5"), dst)
    t0 = time.monotonic()
    outcome, rc = report(args.report, d, args.limit, env)
    case["seconds"] = time.monotonic() - t0
    case["outcome"], case["rc"] = outcome, rc
    problems = []
    if outcome != "exit":
        problems.append(outcome if outcome != "timeout" else f"still running after {args.limit} s")
    else:
        if rc not in VERDICT_CODES:
            problems.append(f"exit code {rc}")
        for name in ("report.html", "summary.json"):
            if not os.path.isfile(os.path.join(d, name)) or os.path.getsize(os.path.join(d, name)) == 0:
                problems.append(f"{name} not written")
        if not problems:
            problems += judge(case, os.path.join(d, "summary.json"), args.reference)
    case["problems"] = problems
    del case["bytes"]
    if not problems and not args.keep:
        shutil.rmtree(d)  # keep only the cases that failed, to reproduce them
    return case


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("fixture")
    ap.add_argument("work")
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=float, default=30, help="seconds one report run may take")
    ap.add_argument("--reader-limit", default="3", help="GPUACCEPT_READ_TIMEOUT for the report (seconds)")
    ap.add_argument("--survey", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep every case's directory, not only the failed ones")
    args = ap.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    source = os.path.join(args.work, "source")
    subprocess.run([args.fixture, source], check=True, stdout=subprocess.DEVNULL)
    env = dict(os.environ, GPUACCEPT_READ_TIMEOUT=args.reader_limit)

    # The report on the undamaged pair: what each phase looks like when nothing is wrong.
    ref_dir = os.path.join(args.work, "reference")
    os.makedirs(ref_dir)
    for phase in PHASES:
        shutil.copyfile(os.path.join(source, f"{phase}.h5"), os.path.join(ref_dir, f"{phase}.h5"))
    outcome, rc = report(args.report, ref_dir, args.limit, env)
    if outcome != "exit" or rc not in VERDICT_CODES:
        sys.exit(f"the report on the undamaged files ended with {outcome} {rc}: see {ref_dir}/out.txt")
    with open(os.path.join(ref_dir, "summary.json"), encoding="utf-8") as f:
        ref = json.load(f)
    args.reference = {}
    for phase in PHASES:
        p, checks = phase_view(ref, phase)
        args.reference[phase] = {"records": p["files"][0]["records"], "checks": checks}

    originals = {phase: open(os.path.join(source, f"{phase}.h5"), "rb").read() for phase in PHASES}
    rng = random.Random(args.seed)
    cases = []
    for i in range(args.cases):
        damaged = PHASES[0] if i % 4 else PHASES[1]  # three in four damage smoke.h5, as in issue 18
        data, what = mutate(originals[damaged], rng)
        cases.append({"id": i, "damaged": damaged, "good": PHASES[1] if damaged == PHASES[0] else PHASES[0],
                      "what": what, "bytes": data, "dir": os.path.join(args.work, f"case-{i:03d}")})

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        done = list(pool.map(lambda c: run_case(args, c, env), cases))
    wall = time.monotonic() - t0

    outcomes = collections.Counter(c["outcome"] if c["outcome"] != "exit" else f"exit {c['rc']}" for c in done)
    failed = [c for c in done if c["problems"]]
    slowest = max(done, key=lambda c: c["seconds"])
    print(f"{len(done)} damaged copies (seed {args.seed}) in {wall:.1f} s with {args.jobs} jobs; "
          f"slowest case {slowest['seconds']:.1f} s (case {slowest['id']})")
    for k, v in sorted(outcomes.items()):
        print(f"  {k}: {v}")
    print("the damaged file, as the report read it:")
    for k, v in sorted(collections.Counter(c.get("read", "-") for c in done).items()):
        print(f"  {k}: {v}")
    print(f"crashed (signal): {sum(1 for c in done if c['outcome'].startswith('signal'))}, "
          f"hung (past {args.limit:g} s): {sum(1 for c in done if c['outcome'] == 'timeout')}, "
          f"other problems: {sum(1 for c in done if c['problems'] and c['outcome'] == 'exit')}")
    for c in failed[:20]:
        print(f"  case {c['id']} ({c['damaged']}.h5, {c['what']}): {'; '.join(c['problems'])}  [{c['dir']}]")
    if failed and not args.survey:
        print(f"FAIL: {len(failed)} of {len(done)} cases")
        return 1
    print("PASS" if not failed else "survey only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
