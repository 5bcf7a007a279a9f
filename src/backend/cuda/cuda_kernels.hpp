#pragma once
// Host-side launchers of the CUDA backend's kernels (cuda_kernels.cu). Only
// backend/cuda includes this. They return the launch's cudaError_t.
#include <cuda_runtime_api.h>

#include <cstddef>

namespace xb::cuda {

inline constexpr int kCopyThreads = 512;  // threads per block of the copy kernels

// One thread spins until flag[0] != 0 (host-mapped memory) or `timeout_ns`
// passes (then it sets flag[1]), so work queued behind it starts together.
cudaError_t launch_latch(cudaStream_t s, volatile int* flag, unsigned long long timeout_ns);

// Copies n bytes with `blocks` thread blocks. tile == 0: direct 16-byte
// vector loads and stores; tile > 0: staged through a shared-memory tile of
// that many bytes per block (a multiple of 16). Unaligned pointers fall back
// to byte copies.
cudaError_t launch_copy(cudaStream_t s, void* dst, const void* src, std::size_t n, int blocks,
                        std::size_t tile);

// Loads every kernel on the current device now: with CUDA's lazy loading a
// first launch behind a spinning latch could wait for the latch itself.
cudaError_t preload_kernels();

// Blocks of kCopyThreads that one SM keeps resident of the copy kernel that
// launch_copy uses for `tile` (the occupancy API, on the current device).
cudaError_t copy_blocks_per_sm(std::size_t tile, int* blocks);

// Lets the staged kernel use `tile` bytes of dynamic shared memory on the
// current device (needed above 48 KiB).
cudaError_t allow_tile(std::size_t tile);

}  // namespace xb::cuda
