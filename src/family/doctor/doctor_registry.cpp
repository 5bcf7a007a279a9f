// The doctor checks: the one list of them, in the order doctor runs and
// reports them. A check is its own file, check_NAME.cpp, which defines
// make_NAME_check(); adding a check is that file and its line here.
#include <fmt/format.h>

#include <algorithm>

#include "family/doctor/doctor_context.hpp"

// X(name): the check made by make_name_check().
#define XB_DOCTOR_CHECKS(X) \
  X(bandwidth)              \
  X(link)                   \
  X(direction)              \
  X(duplex)                 \
  X(numa)                   \
  X(devices)                \
  X(data)                   \
  X(pairs)                  \
  X(latency)                \
  X(engine)                 \
  X(noise)                  \
  X(clocks)

namespace xb::doctor {

#define XB_DOCTOR_DECLARE(name) std::unique_ptr<Check> make_##name##_check();
XB_DOCTOR_CHECKS(XB_DOCTOR_DECLARE)
#undef XB_DOCTOR_DECLARE

std::vector<std::unique_ptr<Check>> make_checks() {
  std::vector<std::unique_ptr<Check>> all;
#define XB_DOCTOR_MAKE(name) all.push_back(make_##name##_check());
  XB_DOCTOR_CHECKS(XB_DOCTOR_MAKE)
#undef XB_DOCTOR_MAKE
  return all;
}

const std::vector<std::string>& check_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& c : make_checks()) n.push_back(c->name());
    return n;
  }();
  return names;
}

std::string checks_help() {
  std::string out;
  std::size_t width = 0;
  for (const std::string& n : check_names()) width = std::max(width, n.size());
  for (const auto& c : make_checks())
    out += fmt::format("  {:<{}}  {}\n", c->name(), width, c->what());
  return out;
}

}  // namespace xb::doctor
