#pragma once
// The set-up every multi-rank family shares.
#include <functional>
#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "family/family.hpp"
#include "family/options.hpp"
#include "family/output.hpp"
#include "runtime/runtime.hpp"

namespace xb {

// --ranks re-executes under mpiexec, MPI starts, the backend is chosen
// (choose_backend, collectively), `validate` runs on every rank, and -o is
// opened on rank 0 (a bad path fails on every rank alike).
struct Ranked {
  std::string backend_note;    // ChosenBackend::note
  std::string backend_broken;  // ChosenBackend::broken (this rank's)
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Runtime> rt;
  std::unique_ptr<Output> out;  // rank 0 only
  // The run starts (Output::begin on rank 0; stop signals armed on every
  // rank, as stop_point(rt) needs).
  void begin(const Family& f, const std::string& command, Params params);
  // The run starts for a family whose report is one document at its end
  // (gemm-ar): stop signals armed on every rank (the notice from rank 0), so
  // its stop points end a stopped run with 128 + signal; -o keeps what it
  // held until report().
  void begin_whole() const;
  // Fills the environment, prints from rank 0 only, returns the exit code.
  int report(const Family& f, Report r, const RunOptions& opts);
};
Ranked start_ranked(const Family& f, const RunOptions& opts, const Invocation& inv,
                    const std::function<void(Runtime&, Backend&)>& validate);

}  // namespace xb
