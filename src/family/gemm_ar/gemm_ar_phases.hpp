#pragma once
// What the host and the device paths of gemm-ar share: the phases' samples,
// their interleaved order, the records and the summary with its check.
// Internal to family/gemm_ar.
#include <functional>
#include <string>
#include <vector>

#include "coll/communicator.hpp"
#include "family/gemm_ar/gemm_ar_bench.hpp"

namespace xb {

// Kept samples (after warm-up) of each phase, in microseconds, max over ranks.
struct Phases {
  std::vector<double> compute, comm, sequential, pipelined, compute_done, library;
};

// Warm-up then timed iterations of the phases cfg.mode asks for, interleaved
// within each iteration in alternating order, so drift over the run (clocks,
// caches, neighbours) hits them alike. Each callback gets `keep` (false
// during warm-up). `apart`: compute alone, comm alone and the library.
// Collective: each iteration starts with a stop point (family/cycles.hpp),
// so a stopped run ends on every rank at the same place (exit 128 + signal).
void interleave(Runtime& rt, const GemmArConfig& cfg, const std::function<void(bool)>& apart,
                const std::function<void(bool)>& sequential,
                const std::function<void(bool)>& pipelined);

// Collective: one allreduce (sum) of `count` floats by the library, timed
// by its stream's marks (device libraries) or the host clock; max over ranks.
double time_library_allreduce(Runtime& rt, Communicator& comm, const void* send, void* recv,
                              std::size_t count);

// What the summary says about the run besides the samples.
struct GemmArOutcome {
  const Tiling* tiling = nullptr;  // padded shape of the check
  std::int64_t waves = 0;
  std::int64_t window_bytes = 0;
  const float* output = nullptr;  // this rank's Mp x Np result
  double atol = 0;
  std::string method;   // "host", "sm", "ce"
  std::string library;  // "mpi", "nccl", or "" when no library baseline ran
};

// Collective: every rank checks its own output; `r` gets the max error and
// the wrong elements over all ranks, and fails if any is wrong.
void set_check_fields(Runtime& rt, Record& r, const GemmArOutcome& o, const GemmArConfig& cfg);

// One record per phase measured (compute, comm, library_allreduce,
// sequential, pipelined), then the gemm_ar summary: the pipelined samples
// (sequential when not run), shape and tiling, overlap metrics (mode all)
// and the check (collective: every rank checks its own output).
void add_gemm_ar_records(Runtime& rt, const GemmArConfig& cfg, const GemmArOutcome& o,
                         const Phases& ph, std::vector<Record>& out);

}  // namespace xb
