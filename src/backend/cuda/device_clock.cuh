#pragma once
// Device-side time shared by the CUDA backend's kernels: the GPU's global
// nanosecond timer (%globaltimer), for the latch's and the fused
// operator's deadlines. Included by .cu files only.

namespace xb::cuda {

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace xb::cuda
