# PyTorch's own figures on the same GPU, measured in the same device call as gpuaccept
# so the two can be compared side by side (docs/performance.md):
#   bf16 8192^3 matmul TFLOP/s and device-to-device copy GB/s (bytes read + written),
# each the median of 20 timed repeats after warm-up, on random data.
import statistics, torch
torch.backends.cuda.matmul.allow_tf32 = False

def timed(fn, repeats=20, warmup=5):
    for _ in range(warmup): fn()
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize(); times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times)

for dev in range(torch.cuda.device_count()):
    torch.cuda.set_device(dev)
    n = 8192
    x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16); y = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    t = timed(lambda: x @ y)
    src = torch.randn(1 << 29, device="cuda"); dst = torch.empty_like(src)  # 2 GiB each
    c = timed(lambda: dst.copy_(src))
    print(f"RESULT torch gpu={dev} {torch.cuda.get_device_name(dev)} bf16_8192_tflops={2*n**3/t/1e12:.1f} "
          f"d2d_copy_GBps={2*src.numel()*4/c/1e9:.0f}", flush=True)
    del x, y, src, dst; torch.cuda.empty_cache()
