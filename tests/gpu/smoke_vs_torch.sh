#!/bin/bash
# The smoke phase's bf16 8192^3 GEMM and device-to-device copy against PyTorch's on the
# same GPU, in one call, for docs/performance.md:
#   tests/gpu/smoke_vs_torch.sh            (after: source tests/gpu/env.sh on the GPU machine)
# Prints both figures and the ratio; PyTorch is timed two ways (tests/gpu/torch_baseline.py):
# "b2b" as smoke times (back to back), "one" with an idle sync after every operation.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
cfg=$OUT/smoke-vs-torch.yaml
printf 'smoke:\n  gemm_sizes: [8192]\n  gemm_dtypes: [bf16]\n  sustained_seconds: 1\n' >"$cfg"
BIN=${BIN:-${GPUACCEPT_BIN:-$here/../../build/bin}/gpuaccept-smoke} SMOKE_CONFIG=$cfg OUT=$OUT/smoke \
  "$here/smoke_local.sh" >"$OUT/smoke-vs-torch.log" 2>&1
python3 "$here/torch_baseline.py" >"$OUT/torch.log" 2>&1
python3 - "$OUT/smoke-vs-torch.log" "$OUT/torch.log" <<'PY'
import re, sys
smoke, torch = open(sys.argv[1]).read(), open(sys.argv[2]).read()
g = re.search(r"PASS\s+0\s+gemm .*dtype=bf16 .*k=8192 .*?([\d.]+) TFLOP/s", smoke)
c = re.search(r"PASS\s+0\s+memory_bandwidth .*kind=d2d_copy\s+([\d.]+) GB/s", smoke)
t = re.search(r"bf16_8192_tflops one=([\d.]+) b2b=([\d.]+) d2d_copy_GBps one=([\d.]+) b2b=([\d.]+)", torch)
if not (g and c and t):
    print("missing figures; logs:", sys.argv[1], sys.argv[2]); print(smoke[-2000:]); print(torch[-2000:]); sys.exit(1)
gemm, copy = float(g.group(1)), float(c.group(1))
t_one, t_b2b, c_one, c_b2b = map(float, t.groups())
print(f"bf16 8192^3 GEMM  smoke {gemm:7.1f} TFLOP/s | torch b2b {t_b2b:7.1f} ({gemm / t_b2b:6.1%}) | torch one {t_one:7.1f} ({gemm / t_one:6.1%})")
print(f"d2d copy 2 GiB    smoke {copy:7.0f} GB/s    | torch b2b {c_b2b:7.0f} ({copy / c_b2b:6.1%}) | torch one {c_one:7.0f} ({copy / c_one:6.1%})")
PY
