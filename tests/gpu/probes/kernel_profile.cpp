// kernel_profile: where a CUDA program's GPU time goes, kernel by kernel, without Nsight
// (the lent GPU machine has none). A CUPTI injection library: the CUDA driver loads it into
// any program that runs with
//   CUDA_INJECTION64_PATH=/path/libgpuaccept_kernel_profile.so
// so the same table comes out of gpuaccept-ddp and of the PyTorch anchor, side by side.
//
// At exit it writes, to $KERNEL_PROFILE_OUT (default stderr; "%p" in it becomes the process
// id), one line per kernel name:
// total GPU ms, share of all kernel time, launches and mean µs, heaviest first.
//
// Which kernels count (the window):
//   $KERNEL_PROFILE_STEP (a part of the name of a kernel launched once a training step, e.g.
//   the cross-entropy's): whole steps, from one launch of that kernel to its last launch, which
//   is left out with its step and whatever follows (a program's final checks, copies of the
//   weights to the host). With $KERNEL_PROFILE_WINDOW_S, the first launch is the first in the
//   last that many seconds before the last. Every per-step figure divides by whole steps.
//   Otherwise, with $KERNEL_PROFILE_WINDOW_S, the operations that start in the last that many
//   seconds of GPU activity (a window that may cut steps at both ends); without, the whole run.
//
// After the table, where the busiest stream (the compute stream of a training step) sat idle:
// its gaps between consecutive operations (kernels, and the memsets and copies on it, named
// "[memset]" and "[memcpy]"), summed by the pair around each gap, longest first. In a gap the
// stream had nothing to run: the host's call launching the next operation had not returned
// yet, the stream waited for an event (another stream's work, a collective), or the GPU was
// between two operations queued back to back (about 1.5 us on an H200). The host's runtime and
// driver calls, recorded too and matched to what they launched by correlation id, tell the
// first apart: where the launching call returned after the stream fell idle, the gap up to that
// return counts as the host's ("host_ms"). Recording the calls lengthens them a little.
// With $KERNEL_PROFILE_STEP, a line per step: the step's length (the window over its steps), the
// busiest stream's kernel time and idle time (the host's part) and the other streams' kernels.
//
// Build (tests/gpu/CMakeLists.txt does this where CUPTI is found):
//   g++ -O2 -shared -fPIC kernel_profile.cpp -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcupti
#include <cupti.h>
#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

// The activity records' newest layouts: CUDA 13's CUPTI (API 130001) has Kernel10 and
// Memcpy6, CUDA 12.4's (API 22) Kernel9 and Memcpy5. Only fields every layout has are read
// (name, start, end, streamId, correlationId), so the header's own newest one is right.
#if CUPTI_API_VERSION >= 130000
using ActivityKernel = CUpti_ActivityKernel10;
using ActivityMemcpy = CUpti_ActivityMemcpy6;
#else
using ActivityKernel = CUpti_ActivityKernel9;
using ActivityMemcpy = CUpti_ActivityMemcpy5;
#endif

struct KernelTotal {
  double ns = 0;
  long long launches = 0;
};

struct Launch {
  int name;  // index into g_names
  unsigned long long start, end;
  unsigned stream;
  unsigned correlation;  // the API call that launched it (g_call_end)
};

struct Gap {
  double ns = 0;
  double host_ns = 0;  // of ns, before the host's call launching the next operation returned
  long long count = 0;
};

std::mutex g_mutex;
std::vector<std::string> g_names;        // demangled, without arguments
std::map<std::string, int> g_name_index;  // name -> index into g_names
std::vector<Launch> g_launches;  // kernels
std::vector<Launch> g_others;    // memsets and copies: only for the gaps between operations
// Correlation id -> when that runtime or driver call returned: every call of the run (a few
// thousand a training step, so tens of MB for a run of minutes).
std::unordered_map<unsigned, unsigned long long> g_call_end;

void report_cupti(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "kernel_profile: %s failed: %s\n", call, text ? text : "unknown error");
}
#define CUPTI_CALL(call) report_cupti((call), #call)

// "void ns::kernel<8>(float*, int)" -> "ns::kernel<8>": the arguments only make names long.
std::string short_name(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                                        &std::free);
  std::string name = status == 0 && demangled ? demangled.get() : mangled;
  for (const std::string drop : {"(anonymous namespace)::", "void "}) {
    for (auto at = name.find(drop); at != std::string::npos; at = name.find(drop)) name.erase(at, drop.size());
  }
  int depth = 0;  // cut at the first '(' outside template brackets
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (name[i] == '(' && depth == 0 && i > 0) return name.substr(0, i);
  }
  return name;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  constexpr size_t kBytes = 8 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBytes));
  *size = kBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard lock(g_mutex);
  auto name_index = [](const std::string& name) {
    auto [it, added] = g_name_index.try_emplace(name, static_cast<int>(g_names.size()));
    if (added) g_names.push_back(it->first);
    return it->second;
  };
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_RUNTIME || record->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      unsigned long long& end = g_call_end[a->correlationId];
      end = std::max(end, static_cast<unsigned long long>(a->end));
      continue;
    }
    if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      g_others.push_back({name_index("[memset]"), m->start, m->end, m->streamId, m->correlationId});
      continue;
    }
    if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const ActivityMemcpy*>(record);
      g_others.push_back({name_index("[memcpy]"), m->start, m->end, m->streamId, m->correlationId});
      continue;
    }
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const ActivityKernel*>(record);
    g_launches.push_back({name_index(short_name(k->name)), k->start, k->end, k->streamId, k->correlationId});
  }
  std::free(buffer);
}

// Wall time the GPU spent running at least one kernel: with kernels on several streams the
// sum of kernel times exceeds it.
double busy_ns(std::vector<Launch> kept) {
  std::sort(kept.begin(), kept.end(), [](const Launch& a, const Launch& b) { return a.start < b.start; });
  double busy = 0;
  unsigned long long open = 0, close = 0;
  for (const auto& k : kept) {
    if (k.start > close) {
      busy += static_cast<double>(close - open);
      open = k.start, close = k.end;
    } else {
      close = std::max(close, k.end);
    }
  }
  return busy + static_cast<double>(close - open);
}

// The stream with the most kernel time among `kernels`, and its idle gaps: time between the
// end of everything started so far on it (kernels and `others`, its memsets and copies) and
// the start of the next operation, summed by the pair around each gap (the operation that
// ended last, the next one): (previous, next) name indexes. Operations that overlap (a short
// kernel inside a longer one) leave no gap. Of each gap, the part before the host's call that
// launched the next operation returned is the host's (Gap::host_ns; *host_ns their sum).
// `closing`, when on that stream, is the operation after the window (the next step's first
// marker): the gap before it counts, its time does not.
std::map<std::pair<int, int>, Gap> busiest_stream_gaps(const std::vector<Launch>& kernels,
                                                       const std::vector<Launch>& others, const Launch* closing,
                                                       unsigned* stream, double* idle_ns, double* host_ns) {
  std::map<unsigned, double> per_stream;
  for (const auto& k : kernels) per_stream[k.stream] += static_cast<double>(k.end - k.start);
  std::map<std::pair<int, int>, Gap> gaps;
  *idle_ns = 0;
  *host_ns = 0;
  if (per_stream.empty()) return gaps;
  *stream = std::max_element(per_stream.begin(), per_stream.end(),
                             [](const auto& a, const auto& b) { return a.second < b.second; })->first;
  std::vector<Launch> mine;
  for (const auto* ops : {&kernels, &others})
    for (const auto& k : *ops)
      if (k.stream == *stream) mine.push_back(k);
  if (closing && closing->stream == *stream) mine.push_back(*closing);
  std::sort(mine.begin(), mine.end(), [](const Launch& a, const Launch& b) { return a.start < b.start; });
  if (mine.empty()) return gaps;
  unsigned long long busy_until = mine[0].end;
  int last = mine[0].name;  // the operation that ends at busy_until
  for (std::size_t i = 1; i < mine.size(); ++i) {
    if (mine[i].start > busy_until) {
      const double ns = static_cast<double>(mine[i].start - busy_until);
      Gap& g = gaps[{last, mine[i].name}];
      g.ns += ns;
      ++g.count;
      *idle_ns += ns;
      // A call recorded for this operation that returned after the stream fell idle: the host late.
      if (auto call = g_call_end.find(mine[i].correlation); call != g_call_end.end() && call->second > busy_until) {
        const double late = static_cast<double>(std::min(call->second, mine[i].start) - busy_until);
        g.host_ns += late;
        *host_ns += late;
      }
    }
    if (mine[i].end >= busy_until) busy_until = mine[i].end, last = mine[i].name;
  }
  return gaps;
}

bool named(const Launch& k, const char* part) {
  return part && *part && g_names[static_cast<std::size_t>(k.name)].find(part) != std::string::npos;
}

// The operations that count: those that start in [from, to). With `step` (a kernel launched
// once a step) launched twice or more: whole steps between two of its launches, `closing` the
// last launch (not counted). Otherwise the last `window_ns` of GPU activity, or the whole run.
struct Window {
  unsigned long long from = 0, to = ~0ULL;
  long long steps = 0;
  const Launch* closing = nullptr;
  std::string what;
};

Window choose_window(double window_ns, const char* window_s, const char* step) {
  Window w;
  std::vector<const Launch*> marks;  // the once-a-step kernel's launches, in time order
  for (const auto& k : g_launches)
    if (named(k, step)) marks.push_back(&k);
  std::sort(marks.begin(), marks.end(), [](const Launch* a, const Launch* b) { return a->start < b->start; });
  if (marks.size() >= 2) {
    w.closing = marks.back();
    w.to = w.closing->start;
    auto first = marks.begin();
    if (window_ns > 0 && static_cast<double>(w.to) > window_ns)
      first = std::lower_bound(marks.begin(), marks.end() - 1, static_cast<unsigned long long>(w.to - window_ns),
                               [](const Launch* m, unsigned long long t) { return m->start < t; });
    if (first == marks.end() - 1) --first;  // at least one whole step
    w.from = (*first)->start;
    w.steps = (marks.end() - 1) - first;
    w.what = std::to_string(w.steps) + " whole steps between launches of *" + step + "*";
    return w;
  }
  if (step && *step)
    std::fprintf(stderr, "kernel_profile: *%s* launched %zu times, too few to count steps: the window is by time\n",
                 step, marks.size());
  unsigned long long last_end = 0;
  for (const auto& k : g_launches) last_end = std::max(last_end, k.end);
  if (window_ns > 0 && static_cast<double>(last_end) > window_ns) {
    w.from = last_end - static_cast<unsigned long long>(window_ns);
    w.what = "last " + std::string(window_s) + " s of GPU activity";
  } else {
    w.what = "whole run";
  }
  return w;
}

void write_report() {
  CUPTI_CALL(cuptiActivityFlushAll(1));
  std::lock_guard lock(g_mutex);
  const char* window_s = std::getenv("KERNEL_PROFILE_WINDOW_S");
  const double window_ns = window_s ? std::atof(window_s) * 1e9 : 0;
  const char* step = std::getenv("KERNEL_PROFILE_STEP");
  const Window w = choose_window(window_ns, window_s, step);
  const auto in_window = [&](const Launch& k) { return k.start >= w.from && k.start < w.to; };
  std::vector<Launch> kept, kept_others;
  for (const auto& k : g_launches)
    if (in_window(k)) kept.push_back(k);
  for (const auto& k : g_others)
    if (in_window(k)) kept_others.push_back(k);

  std::map<int, KernelTotal> totals;
  for (const auto& k : kept) {
    totals[k.name].ns += static_cast<double>(k.end - k.start);
    ++totals[k.name].launches;
  }
  std::vector<std::pair<std::string, KernelTotal>> rows;
  for (const auto& [name, t] : totals) rows.emplace_back(g_names[static_cast<std::size_t>(name)], t);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  double total = 0;
  for (const auto& r : rows) total += r.second.ns;

  // A process that ran no kernel (torchrun's launcher initialises CUDA too) writes nothing,
  // so it cannot overwrite the report of the process that did the work.
  if (rows.empty()) return;
  // "%p" in the path becomes the process id: one report per rank.
  std::string path = std::getenv("KERNEL_PROFILE_OUT") ? std::getenv("KERNEL_PROFILE_OUT") : "";
  if (auto at = path.find("%p"); at != std::string::npos) path.replace(at, 2, std::to_string(getpid()));
  FILE* out = path.empty() ? stderr : std::fopen(path.c_str(), "w");
  if (!out) {
    std::fprintf(stderr, "kernel_profile: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    out = stderr;
  }
  std::fprintf(out, "# kernel time %.3f ms in %zu kernel names, GPU busy %.3f ms, %s\n", total / 1e6, rows.size(),
               busy_ns(kept) / 1e6, w.what.c_str());
  std::fprintf(out, "%10s %6s %9s %10s  %s\n", "total_ms", "share", "launches", "mean_us", "kernel");
  for (const auto& [name, t] : rows)
    std::fprintf(out, "%10.3f %5.1f%% %9lld %10.2f  %s\n", t.ns / 1e6, total > 0 ? 100.0 * t.ns / total : 0.0,
                 t.launches, t.ns / 1e3 / static_cast<double>(t.launches), name.c_str());

  unsigned stream = 0;
  double idle = 0, host = 0;
  const auto gaps = busiest_stream_gaps(kept, kept_others, w.closing, &stream, &idle, &host);
  std::vector<std::pair<std::pair<int, int>, Gap>> gap_rows(gaps.begin(), gaps.end());
  std::sort(gap_rows.begin(), gap_rows.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  std::fprintf(out,
               "# idle on stream %u (the most kernel time): %.3f ms between its operations, of which %.3f ms before the "
               "host's launching call had returned; by those around each gap\n",
               stream, idle / 1e6, host / 1e6);
  if (w.steps > 0) {
    double mine = 0;  // the busiest stream's kernel time
    for (const auto& k : kept)
      if (k.stream == stream) mine += static_cast<double>(k.end - k.start);
    const auto per_step = [&](double ns) { return ns / 1e6 / static_cast<double>(w.steps); };
    std::fprintf(out,
                 "# per step (%lld whole steps): %.3f ms long; stream %u: kernels %.3f ms, idle %.3f ms (the host's "
                 "%.3f); other streams' kernels %.3f ms\n",
                 w.steps, per_step(static_cast<double>(w.to - w.from)), stream, per_step(mine), per_step(idle),
                 per_step(host), per_step(total - mine));
  }
  std::fprintf(out, "%10s %6s %9s %10s %9s  %s\n", "idle_ms", "share", "gaps", "mean_us", "host_ms", "after -> before");
  const std::size_t shown = std::min<std::size_t>(gap_rows.size(), 25);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& [pair, g] = gap_rows[i];
    std::fprintf(out, "%10.3f %5.1f%% %9lld %10.2f %9.3f  %s -> %s\n", g.ns / 1e6,
                 idle > 0 ? 100.0 * g.ns / idle : 0.0, g.count, g.ns / 1e3 / static_cast<double>(g.count), g.host_ns / 1e6,
                 g_names[static_cast<std::size_t>(pair.first)].c_str(), g_names[static_cast<std::size_t>(pair.second)].c_str());
  }
  if (out != stderr) std::fclose(out);
}

}  // namespace

// Called by the CUDA driver when it loads this library through CUDA_INJECTION64_PATH.
extern "C" int InitializeInjection(void) {
  CUPTI_CALL(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  // CONCURRENT_KERNEL leaves kernels to overlap as they would; KERNEL would serialise them.
  CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  // Memsets and copies: only for the busiest stream's gaps (they are not kernels).
  CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
  CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
  // The host's calls, matched to what they launched by correlation id: was a gap the host's?
  // Recording them adds host time to every call: the profiled run's tokens/s counts it.
  CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
  CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
  std::atexit(write_report);
  return 1;
}
