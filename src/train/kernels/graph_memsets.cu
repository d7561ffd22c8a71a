// graph_memsets.h: each memset node of a captured graph replaced by a fill kernel's node with the
// same dependencies and dependents.
#include "train/graph_memsets.h"

#include <algorithm>
#include <source_location>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "train/kernels/common.cuh"

namespace gpuaccept::train {

using namespace detail;

namespace {

void check(cudaError_t rc, std::string_view call, const std::source_location& loc = std::source_location::current()) {
  if (rc != cudaSuccess) raise_call_error("CUDA", call, cudaGetErrorString(rc), loc);
}

// cudaMemsetParams' writes: `height` rows `pitch` bytes apart, each of `width` elements of T
// set to `value` (a memset node's element is 1, 2 or 4 bytes, its value the low bytes).
template <typename T>
__global__ void fill_rows_kernel(char* dst, std::size_t pitch, T value, std::size_t width, std::size_t height) {
  const std::size_t n = width * height;
  for (std::size_t i = global_thread(); i < n; i += global_threads())
    reinterpret_cast<T*>(dst + (i / width) * pitch)[i % width] = value;
}

// One run of bytes, 16-byte aligned and a multiple of 16 long (ddp's own memsets: the 25 MB
// activation gradient and the summed weight gradients zeroed in its backward; cuBLASLt's small
// ones take fill_rows_kernel): 16 bytes a store, the value repeated in `pattern`.
__global__ void fill_16_kernel(uint4* dst, uint4 pattern, std::size_t n) {
  for (std::size_t i = global_thread(); i < n; i += global_threads()) dst[i] = pattern;
}

constexpr int kFillBlock = 256;

// A node's dependencies or its dependents: `query` is cudaGraphNodeGetDependencies or
// cudaGraphNodeGetDependentNodes (one signature; CUDA 13 added the edges' data to both). The
// edges of a captured graph are all default ones (no ports, no programmatic launch), the only
// kind these queries return without their data: anything else fails them, and so the
// rewrite, loudly.
template <typename Query>
std::vector<cudaGraphNode_t> neighbours(cudaGraphNode_t node, Query query, std::string_view call) {
  std::size_t n = 0;
#if CUDART_VERSION >= 13000
  check(query(node, nullptr, nullptr, &n), call);
  std::vector<cudaGraphNode_t> nodes(n);
  if (n) check(query(node, nodes.data(), nullptr, &n), call);
#else
  check(query(node, nullptr, &n), call);
  std::vector<cudaGraphNode_t> nodes(n);
  if (n) check(query(node, nodes.data(), &n), call);
#endif
  return nodes;
}

void add_edge(cudaGraph_t graph, cudaGraphNode_t from, cudaGraphNode_t to) {
#if CUDART_VERSION >= 13000
  check(cudaGraphAddDependencies(graph, &from, &to, nullptr, 1), "cudaGraphAddDependencies");
#else
  check(cudaGraphAddDependencies(graph, &from, &to, 1), "cudaGraphAddDependencies");
#endif
}

cudaGraphNode_t add_kernel_node(cudaGraph_t graph, void* func, std::size_t items, void** args,
                                const std::vector<cudaGraphNode_t>& deps) {
  cudaKernelNodeParams p{};
  p.func = func;
  p.gridDim = dim3(grid_for(items, kFillBlock));
  p.blockDim = dim3(kFillBlock);
  p.kernelParams = args;  // their values copied into the node
  cudaGraphNode_t node = nullptr;
  check(cudaGraphAddKernelNode(&node, graph, deps.data(), deps.size(), &p), "cudaGraphAddKernelNode");
  return node;
}

// The fill kernel's node for memset `m` (elements of T), hanging from `deps`.
template <typename T>
cudaGraphNode_t add_fill_node(cudaGraph_t graph, const cudaMemsetParams& m, const std::vector<cudaGraphNode_t>& deps) {
  const std::size_t row_bytes = m.width * sizeof(T), bytes = row_bytes * m.height;
  const bool one_run = m.height == 1 || m.pitch == row_bytes;
  if (one_run && aligned16(m.dst) && bytes % 16 == 0) {
    unsigned word = static_cast<T>(m.value);  // the element repeated over 4 bytes
    if (sizeof(T) == 1) word *= 0x01010101u;
    if (sizeof(T) == 2) word |= word << 16;
    uint4* dst = static_cast<uint4*>(m.dst);
    uint4 pattern{word, word, word, word};
    std::size_t n = bytes / 16;
    void* args[] = {&dst, &pattern, &n};
    return add_kernel_node(graph, reinterpret_cast<void*>(&fill_16_kernel), n, args, deps);
  }
  char* dst = static_cast<char*>(m.dst);
  std::size_t pitch = m.pitch;
  T value = static_cast<T>(m.value);
  std::size_t width = m.width, height = m.height;
  void* args[] = {&dst, &pitch, &value, &width, &height};
  return add_kernel_node(graph, reinterpret_cast<void*>(&fill_rows_kernel<T>), width * height, args, deps);
}

}  // namespace

GraphMemsets memsets_as_kernels(cudaGraph_t graph) {
  std::size_t count = 0;
  check(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> nodes(count);
  if (count) check(cudaGraphGetNodes(graph, nodes.data(), &count), "cudaGraphGetNodes");

  GraphMemsets out;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    check(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType");
    if (type != cudaGraphNodeTypeMemset) continue;
    cudaMemsetParams m{};
    check(cudaGraphMemsetNodeGetParams(node, &m), "cudaGraphMemsetNodeGetParams");
    const std::vector<cudaGraphNode_t> before =
        neighbours(node, cudaGraphNodeGetDependencies, "cudaGraphNodeGetDependencies");
    const std::vector<cudaGraphNode_t> after =
        neighbours(node, cudaGraphNodeGetDependentNodes, "cudaGraphNodeGetDependentNodes");
    cudaGraphNode_t fill = nullptr;
    switch (m.elementSize) {
      case 1: fill = add_fill_node<unsigned char>(graph, m, before); break;
      case 2: fill = add_fill_node<unsigned short>(graph, m, before); break;
      case 4: fill = add_fill_node<unsigned int>(graph, m, before); break;
      default: raise_call_error("CUDA", "memsets_as_kernels", "a memset node of element size other than 1, 2 or 4");
    }
    for (cudaGraphNode_t next : after) add_edge(graph, fill, next);
    check(cudaGraphDestroyNode(node), "cudaGraphDestroyNode");  // and its edges
    const std::size_t bytes = m.width * m.height * m.elementSize;
    ++out.replaced;
    out.bytes += bytes;
    out.largest = std::max(out.largest, bytes);
  }
  return out;
}

}  // namespace gpuaccept::train
