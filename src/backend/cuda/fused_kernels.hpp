#pragma once
// Host-side launchers of the fused GEMM + AllReduce kernels
// (fused_kernels.cu). Only backend/cuda includes this. They return the
// launch's cudaError_t.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "coll/fused.hpp"

namespace xb::cuda {

inline constexpr int kFusedMaxRanks = 16;  // peer pointers passed by value
inline constexpr int kFusedThreads = 256;  // threads per comm block

// What the comm kernel of one rank sees; every pointer is device memory of
// this device (peer windows mapped through CUDA IPC).
struct FusedArgs {
  const FusedItem* items = nullptr;  // the plan's items, offsets per block
  const std::int32_t* offsets = nullptr;
  int rank = 0, nranks = 1;
  std::int64_t tiles_n = 0, Np = 0, base_m = 0, base_n = 0, comm_sub_m = 0, subtiles = 0;
  std::int64_t stage_slot = 0;        // floats of one source's stage slot
  const float* C = nullptr;           // this rank's Mp x Np product
  float* stage[kFusedMaxRanks] = {};  // each rank's stage (window + FusedWindow::stage)
  float* out[kFusedMaxRanks] = {};    // each rank's output
  unsigned* arrival[kFusedMaxRanks] = {};
  unsigned* done[kFusedMaxRanks] = {};
  const unsigned* wave_ready = nullptr;  // this rank's, one per wave
  unsigned epoch = 1;
  unsigned done_target = 0;
  std::int32_t drop_tile = -1;
  unsigned long long timeout_ns = 0;
  FusedStuck* stuck = nullptr;  // this rank's error word (device memory)
};

// The comm kernel on `blocks` blocks: each runs its items in order, then
// block 0 waits until this rank's output is complete.
// smem_bytes: dynamic shared memory each block asks for (unused by the
// kernel): more than half an SM's keeps two comm blocks off one SM.
cudaError_t launch_fused_comm(cudaStream_t s, const FusedArgs& a, int blocks,
                              std::size_t smem_bytes = 0);
// Lets fused_comm ask for `bytes` of dynamic shared memory (above 48 KiB).
cudaError_t reserve_fused_comm_smem(std::size_t bytes);
// flags[0..n) = value, with system-scope release (a wave's ready flag).
cudaError_t launch_set_flags(cudaStream_t s, unsigned* flags, int n, unsigned value);
// The ce engine's signal after the copies of tile rows [row0, row0 + rows):
// +1 on the owner's arrival counter of every subtile of their tiles
// (but drop_tile's).
cudaError_t launch_arrive_rows(cudaStream_t s, const FusedArgs& a, std::int64_t row0,
                               std::int64_t rows);
// *blocks = fused_comm blocks one SM keeps resident with `smem_bytes` of
// dynamic shared memory each (cudaOccupancyMaxActiveBlocksPerMultiprocessor).
cudaError_t fused_comm_blocks_per_sm(int* blocks, std::size_t smem_bytes);
// Loads the kernels now (lazy loading would load them behind spinning ones).
cudaError_t preload_fused_kernels();

}  // namespace xb::cuda
