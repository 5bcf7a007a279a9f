// compare_results + format_comparison (report/compare.hpp): `xferbench
// compare BASE NEW`, on two result files from anywhere. Any pair either
// compares or throws UsageError; a comparison's counts add up. Also
// parse_threshold (--threshold): a value in [0, 1) or UsageError.
//
// Input: the threshold text, a 0 byte, BASE, a 0 byte, NEW. The files go to
// in-memory files (memfd) named by /proc/self/fd/N. coll records are looked
// up with coll's schema (keys op, dtype, redop, inplace; headline busbw),
// copy's with a key field, the rest with none.
#include "report/compare.hpp"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "common.hpp"
#include "core/error.hpp"
#include "core/schema.hpp"

namespace {

const xb::RecordSchema* schema_of(const std::string& command) {
  static const xb::RecordSchema coll = [] {
    xb::RecordSchema s("coll");
    s.add(xb::FieldKey<std::string>{"op"}, xb::FieldRole::key, "")
        .add(xb::FieldKey<std::string>{"dtype"}, xb::FieldRole::key, "")
        .add(xb::FieldKey<std::string>{"redop"}, xb::FieldRole::key, "")
        .add(xb::FieldKey<bool>{"inplace"}, xb::FieldRole::key, "")
        .add(xb::FieldKey<double>{"busbw"}, xb::FieldRole::metric, "")
        .headline(xb::FieldKey<double>{"busbw"});
    return s;
  }();
  static const xb::RecordSchema copy = [] {
    xb::RecordSchema s("copy");
    s.add(xb::FieldKey<std::int64_t>{"threads"}, xb::FieldRole::key, "");
    return s;
  }();
  if (command == "coll") return &coll;
  if (command == "copy") return &copy;
  return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static xb::fuzz::MemFile base, next;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const auto a = in.find('\0');
  if (a == std::string_view::npos) return 0;
  const auto b = in.find('\0', a + 1);
  if (b == std::string_view::npos) return 0;

  double threshold = 0.05;
  try {
    threshold = xb::parse_threshold(std::string(in.substr(0, a)));
    FUZZ_CHECK(threshold >= 0 && threshold < 1, in.substr(0, a));
  } catch (const xb::UsageError&) {
    threshold = 0.05;
  } catch (const std::exception& e) {
    FUZZ_CHECK(false && "parse_threshold threw something other than UsageError", e.what());
  }

  base.write(in.substr(a + 1, b - a - 1));
  next.write(in.substr(b + 1));
  xb::Comparison c;
  try {
    c = xb::compare_results(base.path(), next.path(), threshold, schema_of);
  } catch (const xb::UsageError&) {
    return 0;
  } catch (const std::exception& e) {
    FUZZ_CHECK(false && "compare_results threw something other than UsageError", e.what());
  }
  int regressions = 0;
  // The count the exit code follows: slower past the threshold, or newly wrong data.
  for (const auto& r : c.rows) regressions += r.regression || r.wrong_data ? 1 : 0;
  FUZZ_CHECK(regressions == c.regressions, "regression count");
  (void)xb::format_comparison(c, threshold);
  return 0;
}
