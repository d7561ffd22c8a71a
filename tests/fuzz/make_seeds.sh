#!/bin/bash
# Remakes the seed corpora in tests/fuzz/seeds/ from real files: the report fixture's run
# directory (gpuaccept-report-fixture, real HDF5 files as the phases write them), the
# configs/ profiles and threshold files, strings the report escapes, and tests/fuzz/regressions/.
#   tests/fuzz/make_seeds.sh [BUILD_DIR]     (BUILD_DIR: the main build, default build/)
# Needs the main build (the fixture) and the fuzz build (make_wire_seed).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
seeds=$root/tests/fuzz/seeds
make -s -f "$root/tests/fuzz/Makefile" OUT="$build/fuzz" "$build/fuzz/bin/make_wire_seed"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/bin/gpuaccept-report-fixture" "$tmp/run" >/dev/null
"$build/bin/gpuaccept-report-fixture" --foreign "$tmp/foreign.h5" >/dev/null
rm -rf "$seeds"
mkdir -p "$seeds"/{wire,result_file,config,run_dir,html}
# Inputs that once made a target report wrongly (tests/fuzz/regressions/<target>/), kept as seeds.
cp -r "$root/tests/fuzz/regressions/." "$seeds/"

# result_file: each phase file, a rank checkpoint, a foreign HDF5 file.
for f in "$tmp"/run/*.h5; do cp "$f" "$seeds/result_file/"; done
part=$(find "$tmp/run" -path '*.parts/*.h5' | sort | head -n 1)
cp "$part" "$seeds/result_file/part-$(basename "$part")"
cp "$tmp/foreign.h5" "$seeds/result_file/foreign.h5"

# wire: the same files as the reader child sends them.
for f in "$seeds"/result_file/*.h5; do
  n=$(basename "$f" .h5)
  [ "$n" = foreign ] || "$build/fuzz/bin/make_wire_seed" "$f" "$seeds/wire/$n.wire"
done

# config: the profiles and the threshold files.
cp "$root"/configs/*.yaml "$seeds/config/"
for f in "$root"/configs/thresholds/*.yaml; do cp "$f" "$seeds/config/thresholds-$(basename "$f")"; done

# run_dir: run_dir_fuzz.cpp's container (name index, 16-bit length, bytes): two phase files;
# a phase file and another phase's rank checkpoint only; a phase file and a stray file.
python3 - "$tmp/run" "$seeds/run_dir" <<'PY'
import itertools, os, sys
run, out = sys.argv[1], sys.argv[2]
names = ["discover.h5", "smoke.h5", "nccl-scaling.h5", "ddp.h5", "fsdp-lora.h5", "smoke-2.h5",
         "fsdp-lora.parts/rank-00000.h5", "fsdp-lora.parts/rank-00001.h5", "ddp.parts/rank-00000.h5",
         ".smoke.h5.tmp", "notes.txt", "unknown-phase.h5"]
files = {"notes.txt": b"not a results file\n"}
for dirpath, _, fns in os.walk(run):
    for fn in fns:
        rel = os.path.relpath(os.path.join(dirpath, fn), run)
        if rel in names:
            files[rel] = open(os.path.join(dirpath, fn), "rb").read()
def container(items):
    b = b""
    for name, data in items:
        b += bytes([names.index(name), len(data) & 0xFF, (len(data) >> 8) & 0xFF]) + data
    return b
for a, b in [("discover.h5", "smoke.h5"), ("ddp.h5", "fsdp-lora.parts/rank-00001.h5"), ("nccl-scaling.h5", "notes.txt")]:
    if a in files and b in files:
        open(os.path.join(out, f"{a}+{b}".replace("/", "_")), "wb").write(container([(a, files[a]), (b, files[b])]))
PY

# html: strings from the cluster as the report receives them.
printf '%s' 'node-001.cluster.local' > "$seeds/html/hostname"
printf '%s' '<script>alert(1)</script>' > "$seeds/html/script"
printf '%s' 'a "quoted" & '"'"'single'"'"' <b>' > "$seeds/html/quotes"
printf 'tab\there\nnewline\rcr\001\037\177 control' > "$seeds/html/control"
printf 'NVIDIA H100 80GB HBM3 \xc3\xa9 \xe2\x89\xa5 \xff\xfe invalid' > "$seeds/html/utf8"
printf '%s' '&amp; &lt; already escaped &#39;' > "$seeds/html/entities"
ls -R "$seeds" | head -n 60
