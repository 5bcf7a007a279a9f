// expand_sweep (core/sweep.hpp) fed the way family/run.cpp feeds it: -b, -e
// and -i through parse_size, -f as a number. Any input either expands or
// throws UsageError; an expansion starts at MIN, ascends strictly, stays
// within [MIN, MAX] and holds at most 100000 sizes.
//
// Input: "MIN MAX FACTOR STEP" separated by single spaces (missing fields are
// empty: the family default for MIN/MAX, none for FACTOR/STEP).
#include "core/sweep.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "common.hpp"
#include "core/error.hpp"

namespace {

std::vector<std::string> fields(const std::string& in) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (out.size() < 4) {
    const auto sp = in.find(' ', start);
    out.push_back(in.substr(start, sp == std::string::npos ? std::string::npos : sp - start));
    if (sp == std::string::npos) break;
    start = sp + 1;
  }
  out.resize(4);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const auto f = fields(in);
  xb::SweepSpec spec;
  std::vector<xb::Bytes> sizes;
  try {
    // family/run.cpp: sizes_of (copy's defaults: 4K .. 256M, factor 2)
    spec.min = f[0].empty() ? 4096 : xb::parse_size(f[0], "-b size");
    spec.max = f[1].empty() ? 256ULL << 20 : xb::parse_size(f[1], "-e size");
    spec.step = f[3].empty() ? 0 : xb::parse_size(f[3], "-i step");
    double factor = 0;
    if (!f[2].empty()) {
      char* end = nullptr;
      factor = std::strtod(f[2].c_str(), &end);
      if (end != f[2].c_str() + f[2].size() || !(factor > 0)) return 0;  // CLI11 refuses it
    }
    spec.factor = spec.step ? factor : (factor != 0 ? factor : 2.0);
    sizes = xb::expand_sweep(spec);
  } catch (const xb::UsageError&) {
    return 0;
  } catch (const std::exception& e) {
    FUZZ_CHECK(false && "sweep parsing threw something other than UsageError", e.what());
  }
  const std::string what = in;
  FUZZ_CHECK(!sizes.empty(), what);
  FUZZ_CHECK(sizes.size() <= 100000, what);
  FUZZ_CHECK(sizes.front() == spec.min, what + " -> first size " + std::to_string(sizes.front()));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    FUZZ_CHECK(sizes[i] >= spec.min && sizes[i] <= spec.max,
               what + " -> size " + std::to_string(sizes[i]) + " outside [MIN, MAX]");
    FUZZ_CHECK(i == 0 || sizes[i] > sizes[i - 1], what + " -> sizes not ascending");
  }
  return 0;
}
