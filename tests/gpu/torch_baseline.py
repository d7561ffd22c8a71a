# PyTorch's own figures on the same GPU, measured in the same device call as gpuaccept
# so the two can be compared side by side (docs/performance.md): a bf16 8192^3 matmul in
# TFLOP/s and a device-to-device copy in GB/s (bytes read + written), on random data.
# Two timing styles, because the GPU's power limit makes them differ:
#   one:  one operation between two CUDA events, synchronised after each (a plain
#         PyTorch timing loop; the GPU idles between repeats, so clocks stay at boost)
#   b2b:  back to back, as gpuaccept-smoke times: each sample enqueues enough operations
#         to last >= 5 ms between its two events, nothing idles in between
# Each figure is the median of 20 samples after warm-up.
import statistics, torch
torch.backends.cuda.matmul.allow_tf32 = False

def timed(fn, per_sample=1, repeats=20, warmup=5):
    for _ in range(warmup): fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(per_sample): fn()
        b.record(); torch.cuda.synchronize(); times.append(a.elapsed_time(b) / 1e3 / per_sample)
    return statistics.median(times)

def per_sample(seconds_each):  # enough operations for a >= 5 ms sample
    return max(1, int(0.005 / seconds_each) + 1)

for dev in range(torch.cuda.device_count()):
    torch.cuda.set_device(dev)
    n = 8192
    x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16); y = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    mm = lambda: x @ y
    t_one = timed(mm)
    t_b2b = timed(mm, per_sample(t_one))
    src = torch.randn(1 << 29, device="cuda"); dst = torch.empty_like(src)  # 2 GiB each
    cp = lambda: dst.copy_(src)
    c_one = timed(cp)
    c_b2b = timed(cp, per_sample(c_one))
    flop, moved = 2 * n**3, 2 * src.numel() * 4
    print(f"RESULT torch gpu={dev} {torch.cuda.get_device_name(dev)} torch={torch.__version__} "
          f"bf16_8192_tflops one={flop/t_one/1e12:.1f} b2b={flop/t_b2b/1e12:.1f} "
          f"d2d_copy_GBps one={moved/c_one/1e9:.0f} b2b={moved/c_b2b/1e9:.0f}", flush=True)
    del x, y, src, dst; torch.cuda.empty_cache()
