#pragma once
// The one place a run gets its backend.
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "family/family.hpp"
#include "runtime/runtime.hpp"

namespace xb {

// The backend a run uses. An explicit name must exist and fit the family's
// run (else UsageError with the reason). `auto` takes the first available
// backend that fits, in probe order, and says which it passed over and why
// in `note`; when none fits, the last one's reason is the UsageError. With
// `rt` the choice is collective: every rank takes the same backend.
//
// A backend whose hardware is there but fails (BackendStatus::broken, on
// any rank) is an error, exit 1, named or not: `auto` never measures the
// host in place of a broken GPU. A family that judges machines (doctor,
// fleet: Family::judges_machines) gets the broken one's reason in `broken`
// instead, as a finding of its own, and `auto` goes on to the next backend.
struct ChosenBackend {
  std::unique_ptr<Backend> backend;
  std::string note;    // "auto passed over cuda: NCCL needs one GPU per rank: ..."
  std::string broken;  // this rank's: "cuda: 8 GPUs present (...) but unusable: ..."
};
ChosenBackend choose_backend(const Family& f, const std::string& name, Runtime* rt);
// The same over `statuses` as probe_backends() would give them (tests).
ChosenBackend choose_backend(const Family& f, const std::string& name, Runtime* rt,
                             const std::vector<BackendStatus>& statuses);

}  // namespace xb
