// The fused GEMM + AllReduce's comm kernels (pto-isa's GEMM+AllReduce example on NVIDIA
// GPUs): the counter protocol of coll/fused.hpp with system-scope release/acquire, so
// peers in other processes (CUDA IPC windows, the same GPU or another) see a
// subtile's data before its counter.
#include "backend/common/last_error.hpp"
#include "backend/cuda/device_clock.cuh"
#include "backend/cuda/fused_kernels.hpp"

namespace xb::cuda {
namespace {

__device__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ void store_release(unsigned* p, unsigned v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ void add_release(unsigned* p, unsigned v) {
  asm volatile("red.release.sys.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Thread 0 of the block waits until *p >= want (counters only grow), gives up
// at the deadline or once another block of this rank gave up; the block
// learns the verdict. A miss writes the error word once.
__device__ bool block_wait(const FusedArgs& a, const unsigned* p, unsigned want, std::int32_t what,
                           std::int32_t tile, std::int32_t sub) {
  __shared__ int ok;
  if (threadIdx.x == 0) {
    ok = 1;
    const unsigned long long t0 = global_ns();
    unsigned v;
    // Counters only grow and one epoch adds less than 2^31: compare the
    // difference, so a counter that wrapped around 2^32 still reads right.
    while (static_cast<int>((v = load_acquire(p)) - want) < 0) {
      if (*reinterpret_cast<volatile std::int32_t*>(&a.stuck->what) != FusedStuck::none) {
        ok = 0;
        break;
      }
      if (global_ns() - t0 > a.timeout_ns) {
        if (atomicCAS(reinterpret_cast<int*>(&a.stuck->what), FusedStuck::none, what) ==
            FusedStuck::none) {
          a.stuck->tile = tile;
          a.stuck->sub = sub;
          a.stuck->seen = v;
          a.stuck->want = want;
          __threadfence();
        }
        ok = 0;
        break;
      }
      __nanosleep(64);
    }
  }
  __syncthreads();
  const bool r = ok != 0;
  __syncthreads();  // `ok` is reused by the next wait
  return r;
}

// Independent float4 loads each thread keeps in flight before its stores
// (review finding 3: one at a time left the comm kernel latency-bound).
constexpr int kInFlight = 4;

// rows x cols floats (cols a multiple of 4) from src to dst, both with row
// pitch `pitch` floats; L2-only loads (a peer or the GEMM wrote them). A
// subtile is well under 2^31 elements: 32-bit index math.
__device__ void copy_rows(float* __restrict__ dst, const float* __restrict__ src, int rows,
                          int cols, std::int64_t pitch) {
  const int c4 = cols / 4, n = rows * c4;
  const int step = static_cast<int>(blockDim.x);
  for (int base = static_cast<int>(threadIdx.x); base < n; base += step * kInFlight) {
    float4 v[kInFlight] = {};
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int i = base + u * step;
      if (i < n) {
        const int r = i / c4, c = (i - r * c4) * 4;
        v[u] = __ldcg(reinterpret_cast<const float4*>(src + r * pitch + c));
      }
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int i = base + u * step;
      if (i < n) {
        const int r = i / c4, c = (i - r * c4) * 4;
        *reinterpret_cast<float4*>(dst + r * pitch + c) = v[u];
      }
    }
  }
}

// One subtile of an owned tile: the sum of every source's slot, in rank
// order (deterministic), written into every rank's output.
__device__ void reduce_broadcast(const FusedArgs& a, std::int64_t stage_off, std::int64_t out_off) {
  const int c4 = static_cast<int>(a.base_n / 4), n = static_cast<int>(a.comm_sub_m) * c4;
  const int step = static_cast<int>(blockDim.x);
  const float* __restrict__ st = a.stage[a.rank] + stage_off;
  for (int base = static_cast<int>(threadIdx.x); base < n; base += step * kInFlight) {
    float4 s[kInFlight] = {};
    std::int64_t off[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int i = base + u * step;
      off[u] = i < n ? static_cast<std::int64_t>(i / c4) * a.Np + (i % c4) * 4 : 0;
      if (i < n) s[u] = __ldcg(reinterpret_cast<const float4*>(st + off[u]));
    }
    for (int src = 1; src < a.nranks; ++src) {
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        if (base + u * step >= n) continue;
        const float4 v = __ldcg(reinterpret_cast<const float4*>(st + src * a.stage_slot + off[u]));
        s[u].x += v.x;
        s[u].y += v.y;
        s[u].z += v.z;
        s[u].w += v.w;
      }
    }
    for (int q = 0; q < a.nranks; ++q)
#pragma unroll
      for (int u = 0; u < kInFlight; ++u)
        if (base + u * step < n) *reinterpret_cast<float4*>(a.out[q] + out_off + off[u]) = s[u];
  }
}

__global__ void fused_comm(FusedArgs a) {
  const std::int32_t first = a.offsets[blockIdx.x], last = a.offsets[blockIdx.x + 1];
  for (std::int32_t k = first; k < last; ++k) {
    const FusedItem it = a.items[k];
    if (it.kind == FusedItem::push) {
      if (it.tile == a.drop_tile) continue;
      if (!block_wait(a, a.wave_ready + it.wave, a.epoch, FusedStuck::wave, it.wave, -1)) return;
      const std::int64_t row = it.tile / a.tiles_n, col = it.tile % a.tiles_n;
      const int owner = static_cast<int>(row % a.nranks);
      const std::int64_t local = row / a.nranks * a.tiles_n + col;
      const std::int64_t r0 = row * a.base_m + it.sub * a.comm_sub_m, c0 = col * a.base_n;
      const std::int64_t stage_row = (row / a.nranks) * a.base_m + it.sub * a.comm_sub_m;
      copy_rows(a.stage[owner] + a.rank * a.stage_slot + stage_row * a.Np + c0,
                a.C + r0 * a.Np + c0, static_cast<int>(a.comm_sub_m), static_cast<int>(a.base_n),
                a.Np);
      __syncthreads();
      if (threadIdx.x == 0) {
        __threadfence_system();
        add_release(a.arrival[owner] + local * a.subtiles + it.sub, 1);
      }
    } else {
      const std::int64_t local = it.tile;
      const std::int64_t lrow = local / a.tiles_n, col = local % a.tiles_n;
      const std::int64_t row = lrow * a.nranks + a.rank;
      const std::int32_t global = static_cast<std::int32_t>(row * a.tiles_n + col);
      if (!block_wait(a, a.arrival[a.rank] + local * a.subtiles + it.sub,
                      a.epoch * static_cast<unsigned>(a.nranks), FusedStuck::arrival, global,
                      it.sub))
        return;
      const std::int64_t stage_off =
          (lrow * a.base_m + it.sub * a.comm_sub_m) * a.Np + col * a.base_n;
      const std::int64_t out_off = (row * a.base_m + it.sub * a.comm_sub_m) * a.Np + col * a.base_n;
      reduce_broadcast(a, stage_off, out_off);
      __syncthreads();
      if (threadIdx.x == 0) {
        __threadfence_system();
        for (int q = 0; q < a.nranks; ++q) add_release(a.done[q], 1);
      }
    }
  }
  if (blockIdx.x == 0) block_wait(a, a.done[a.rank], a.done_target, FusedStuck::done, -1, -1);
}

__global__ void set_flags(unsigned* flags, int n, unsigned value) {
  __threadfence_system();
  for (int i = threadIdx.x; i < n; i += blockDim.x) store_release(flags + i, value);
}

__global__ void arrive_rows(FusedArgs a, std::int64_t row0, std::int64_t rows) {
  __threadfence_system();
  const std::int64_t n = rows * a.tiles_n * a.subtiles;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = row0 + i / (a.tiles_n * a.subtiles);
    const std::int64_t col = i / a.subtiles % a.tiles_n, sub = i % a.subtiles;
    if (row * a.tiles_n + col == a.drop_tile) continue;
    const int owner = static_cast<int>(row % a.nranks);
    const std::int64_t local = row / a.nranks * a.tiles_n + col;
    add_release(a.arrival[owner] + local * a.subtiles + sub, 1);
  }
}

}  // namespace

cudaError_t launch_fused_comm(cudaStream_t s, const FusedArgs& a, int blocks,
                              std::size_t smem_bytes) {
  return launch_reporting_own_error(
      cudaGetLastError, [&] { fused_comm<<<blocks, kFusedThreads, smem_bytes, s>>>(a); });
}

cudaError_t launch_set_flags(cudaStream_t s, unsigned* flags, int n, unsigned value) {
  return launch_reporting_own_error(cudaGetLastError,
                                    [&] { set_flags<<<1, 128, 0, s>>>(flags, n, value); });
}

cudaError_t launch_arrive_rows(cudaStream_t s, const FusedArgs& a, std::int64_t row0,
                               std::int64_t rows) {
  return launch_reporting_own_error(cudaGetLastError,
                                    [&] { arrive_rows<<<4, 256, 0, s>>>(a, row0, rows); });
}

cudaError_t reserve_fused_comm_smem(std::size_t bytes) {
  return cudaFuncSetAttribute(fused_comm, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(bytes));
}

cudaError_t fused_comm_blocks_per_sm(int* blocks, std::size_t smem_bytes) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, fused_comm, kFusedThreads,
                                                       smem_bytes);
}

cudaError_t preload_fused_kernels() {
  cudaFuncAttributes attr;
  for (const void* f :
       {reinterpret_cast<const void*>(fused_comm), reinterpret_cast<const void*>(set_flags),
        reinterpret_cast<const void*>(arrive_rows)})
    if (const cudaError_t e = cudaFuncGetAttributes(&attr, f); e != cudaSuccess) return e;
  return cudaSuccess;
}

}  // namespace xb::cuda
