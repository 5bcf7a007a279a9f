#include "family/agree.hpp"

#include <fmt/format.h>

#include <exception>

#include "core/error.hpp"

namespace xb {

std::string agree_on(Runtime& rt, const std::function<void()>& f) {
  std::string err;
  try {
    f();
  } catch (const std::exception& e) {
    err = fmt::format("rank {}: {}", rt.rank(), e.what());
  }
  return rt.agree(err);
}

void agree_or_throw(Runtime& rt, const std::function<void()>& f) {
  if (auto err = agree_on(rt, f); !err.empty()) throw RuntimeError(err);
}

}  // namespace xb
