#pragma once
// `xferbench latency`: how long one small access takes, with its spread.
//   chase     a pointer chase: a chain of dependent loads at cache-line
//             stride over memory well above the caches (nvbandwidth's
//             *_latency_sm idea), memory of device b loaded by device a's
//             cores, every pair; on the host backend the devices are NUMA
//             nodes. A sample is one chase of `loads` loads / loads: ns per
//             load.
//   pingpong  ranks 0 and 1 bounce a message (8 B .. 64 KiB) with the
//             runtime's blocking send/recv (MPI_Send/MPI_Recv, as
//             osu_latency); a sample is one round trip, reported one-way
//             (round trip / 2), as osu_latency does.
// Every record keeps its per-sample statistics (p50, p99, max, min, mean).
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/record.hpp"
#include "runtime/runtime.hpp"

namespace xb {

namespace latency_field {
inline constexpr FieldKey<std::string> sample{"sample"};  // what one sample's time is
inline constexpr FieldKey<std::int64_t> chain_bytes{"chain_bytes"};
inline constexpr FieldKey<std::int64_t> lines{"lines"};  // cache lines in the chain
inline constexpr FieldKey<std::int64_t> loads{"loads"};  // dependent loads per sample
inline constexpr FieldKey<std::string> link{"link"};     // chaser to memory (backend's link_type)
}  // namespace latency_field

struct LatencyConfig {
  bool chase = true, pingpong = true;
  Bytes chain = 0;  // 0: the backend's default (host: max(256 MiB, 4x the last-level cache))
  int loads = 4096;
  std::optional<int> iters;   // chase samples (default 200), round trips (scaled)
  std::optional<int> warmup;  // default: chase 10, ping-pong iters / 10
  std::vector<Bytes> sizes;   // ping-pong, default 8 B .. 64 KiB x2
  bool check = true;
};

// Round trips per ping-pong size when -n is not given: osu_latency's 10000
// up to 8 KiB, 1000 above.
int pingpong_iters(Bytes n);

// A one-line text of every option that must match across ranks.
std::string latency_digest(const LatencyConfig& cfg);
// Collective. UsageError, the same on every rank, for a chain that is not a
// whole number of lines or too large, or options that differ between ranks.
void validate_latency(Runtime& rt, const LatencyConfig& cfg);

// Collective. The chases (rank 0 measures, the others wait), then the
// ping-pong; every rank returns rank 0's records, each passed to
// record_done on rank 0 as it ends.
std::vector<Record> run_latency(Runtime& rt, Backend& backend, const LatencyConfig& cfg);

}  // namespace xb
