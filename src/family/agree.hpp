#pragma once
// Agreement on a failure across ranks. A step that can fail on some ranks
// only (an allocation, an import) must not leave the other ranks waiting in
// the next collective: every rank runs the step, then all ranks learn the
// same outcome and take the same branch.
#include <functional>
#include <string>

#include "runtime/runtime.hpp"

namespace xb {

// Collective. Runs f() on this rank; a std::exception it throws becomes
// "rank R: <what()>" (other exceptions propagate without agreement). Returns,
// on every rank, the first such error in rank order, or "" when f() succeeded
// everywhere.
std::string agree_on(Runtime& rt, const std::function<void()>& f);

// Collective. agree_on(rt, f), throwing RuntimeError with the agreed error
// on every rank when any rank failed.
void agree_or_throw(Runtime& rt, const std::function<void()>& f);

}  // namespace xb
