#pragma once
// `xferbench kv`: KV-cache block transfers among ranks over the UCX engine
// (after HIXL's FabricMem KV benchmark). Each rank holds a pool of blocks;
// Put: rank 0 writes blocks to every peer; Get: every rank reads blocks from
// its peers into its own memory. Per-rank figures plus a summary.
#include <vector>

#include "backend/backend.hpp"
#include "core/record.hpp"
#include "runtime/runtime.hpp"

namespace xb {

// The fields kv adds to its records.
namespace kv_field {
inline constexpr FieldKey<std::int64_t> blocks{"blocks"};  // blocks per round
inline constexpr FieldKey<std::int64_t> block_bytes{"block_bytes"};
}  // namespace kv_field

struct KvConfig {
  // 61 layers x (128 KiB K+V + 16 KiB), as in HIXL's KV benchmark
  Bytes block_bytes = 61ULL * (128 * 1024 + 16 * 1024);
  std::vector<int> blocks{16, 32, 48, 64};
  int iters = 5;   // timed rounds
  int warmup = 1;  // discarded rounds
  bool check = true;
  double timeout_s = 60;
  // --mem device: each rank's own blocks (what it puts from and gets into)
  // in device memory of its device (local rank modulo the devices): HIXL's
  // D2RH put and RH2D get. The pools the peers reach stay host memory.
  bool device_mem = false;
  // --host-mem huge: the pools and the host blocks on huge pages, from the
  // backend (family/host_pages.hpp) instead of UCX's allocator.
  bool huge_pages = false;
};

// Throws UsageError (same on every rank) for zero blocks/rounds or pools
// larger than available memory.
void validate_kv(Runtime& rt, const KvConfig& cfg);

// Collective. Records, on every rank: per rank "get" (and rank 0's "put"),
// and the summary rows "get_avg" and "get_max" per block count.
// `backend` provides the device memory of --mem device (host-addressable:
// the host backend's NUMA nodes).
std::vector<Record> run_kv(Runtime& rt, const KvConfig& cfg, Backend& backend);

}  // namespace xb
