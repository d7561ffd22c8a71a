// A checksum of device memory, computed where the memory is: what fsdp-lora compares its frozen
// base shards with before and after training (the base must never change; a 15 GB shard is not
// copied to the host to be hashed).
//
//   checksum = mix(bytes ^ golden) XOR over 8-byte words w_i of mix(w_i + golden * (i + 1))
// with mix a 64-bit finalizer (splitmix64's): every word's value and place reach every bit, so a
// flipped bit or a swapped word changes the result; XOR makes the order of the threads
// irrelevant, so the same bytes give the same checksum on every run and GPU. A trailing part
// shorter than 8 bytes is zero-padded. Not cryptographic: it detects damage, not intent.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace gpuaccept::train {

// Enqueues the checksum of `bytes` bytes at `data` (device memory, 8-byte aligned) into
// *out (one uint64 of device memory, overwritten) on `stream`.
void checksum_device(std::uint64_t* out, const void* data, std::size_t bytes, cudaStream_t stream);

// The same on the host (the reference the kernel is tested against).
std::uint64_t checksum_host(const void* data, std::size_t bytes);

}  // namespace gpuaccept::train
