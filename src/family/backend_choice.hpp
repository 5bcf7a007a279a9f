#pragma once
// The one place a run gets its backend.
#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "family/family.hpp"
#include "runtime/runtime.hpp"

namespace xb {

// The backend a run uses. An explicit name must exist and fit the family's
// run (else UsageError with the reason). `auto` takes the first available
// backend that fits, in probe order, and says which it passed over and why
// in `note`; when none fits, the last one's reason is the UsageError. With
// `rt` the choice is collective: every rank takes the same backend.
struct ChosenBackend {
  std::unique_ptr<Backend> backend;
  std::string note;  // "auto passed over cuda: NCCL needs one GPU per rank: ..."
};
ChosenBackend choose_backend(const Family& f, const std::string& name, Runtime* rt);

}  // namespace xb
