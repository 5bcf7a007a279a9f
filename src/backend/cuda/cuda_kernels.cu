// The CUDA backend's kernels: the start latch and the SM copy kernels.
#include <cstdint>

#include "backend/cuda/cuda_kernels.hpp"

namespace xb::cuda {
namespace {

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void latch_kernel(volatile int* flag, unsigned long long timeout_ns) {
  const unsigned long long t0 = global_ns();
  while (flag[0] == 0) {
    if (global_ns() - t0 > timeout_ns) {
      flag[1] = 1;
      return;
    }
    __nanosleep(200);
  }
}

constexpr int kUnroll = 4;

// Grid-stride copy of n16 16-byte vectors, kUnroll loads in flight per thread.
__global__ void copy_direct(uint4* __restrict__ dst, const uint4* __restrict__ src,
                            std::size_t n16) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x * kUnroll;
  for (std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x * kUnroll + threadIdx.x;
       base < n16; base += stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::size_t i = base + static_cast<std::size_t>(u) * blockDim.x;
      if (i < n16) v[u] = src[i];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::size_t i = base + static_cast<std::size_t>(u) * blockDim.x;
      if (i < n16) dst[i] = v[u];
    }
  }
}

// Each block moves whole tiles: global -> shared-memory tile -> global (the
// on-chip buffer path of seed 000, as TGET through UB).
__global__ void copy_staged(uint4* __restrict__ dst, const uint4* __restrict__ src, std::size_t n16,
                            std::size_t tile16) {
  extern __shared__ uint4 stage[];
  const std::size_t tiles = (n16 + tile16 - 1) / tile16;
  for (std::size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const std::size_t off = t * tile16;
    const std::size_t len = n16 - off < tile16 ? n16 - off : tile16;
    for (std::size_t i = threadIdx.x; i < len; i += blockDim.x) stage[i] = src[off + i];
    __syncthreads();
    for (std::size_t i = threadIdx.x; i < len; i += blockDim.x) dst[off + i] = stage[i];
    __syncthreads();
  }
}

__global__ void copy_bytes(unsigned char* dst, const unsigned char* src, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    dst[i] = src[i];
}

}  // namespace

cudaError_t launch_latch(cudaStream_t s, volatile int* flag, unsigned long long timeout_ns) {
  latch_kernel<<<1, 1, 0, s>>>(flag, timeout_ns);
  return cudaGetLastError();
}

cudaError_t launch_copy(cudaStream_t s, void* dst, const void* src, std::size_t n, int blocks,
                        std::size_t tile) {
  if (n == 0) return cudaSuccess;
  auto* d = static_cast<unsigned char*>(dst);
  const auto* p = static_cast<const unsigned char*>(src);
  const bool aligned = (reinterpret_cast<std::uintptr_t>(d) % 16 == 0) &&
                       (reinterpret_cast<std::uintptr_t>(p) % 16 == 0);
  const std::size_t n16 = aligned ? n / 16 : 0;
  if (n16 > 0) {
    if (tile == 0)
      copy_direct<<<blocks, kCopyThreads, 0, s>>>(reinterpret_cast<uint4*>(d),
                                                  reinterpret_cast<const uint4*>(p), n16);
    else
      copy_staged<<<blocks, kCopyThreads, tile, s>>>(
          reinterpret_cast<uint4*>(d), reinterpret_cast<const uint4*>(p), n16, tile / 16);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  const std::size_t done = n16 * 16;
  if (done < n) copy_bytes<<<blocks, kCopyThreads, 0, s>>>(d + done, p + done, n - done);
  return cudaGetLastError();
}

cudaError_t preload_kernels() {
  cudaFuncAttributes a{};
  cudaError_t e = cudaFuncGetAttributes(&a, latch_kernel);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, copy_direct);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, copy_staged);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, copy_bytes);
  return e;
}

cudaError_t allow_tile(std::size_t tile) {
  return cudaFuncSetAttribute(copy_staged, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(tile));
}

}  // namespace xb::cuda
