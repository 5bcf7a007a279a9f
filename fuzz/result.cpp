// load_result_text (report/compare.hpp): how `plot`, `report` and `compare`
// read a result file before anything else touches it. Any bytes either load
// or throw UsageError (one line, the exit-2 path); what loads is a JSON
// object with schema xferbench/1 and a non-empty results array, and loading
// its own text again gives the same text.
//
// The loader takes a path; the input is written to an in-memory file
// (memfd) named by /proc/self/fd/N.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "common.hpp"
#include "core/error.hpp"
#include "report/compare.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static xb::fuzz::MemFile file;
  file.write(std::string_view(reinterpret_cast<const char*>(data), size));
  std::string text;
  try {
    text = xb::load_result_text(file.path());
  } catch (const xb::UsageError& e) {
    return 0;
  } catch (const std::exception& e) {
    FUZZ_CHECK(false && "load_result_text threw something other than UsageError", e.what());
  }
  const auto doc = nlohmann::json::parse(text);  // it wrote JSON
  FUZZ_CHECK(doc.is_object() && doc.contains("schema") && doc.contains("results") &&
                 doc["results"].is_array() && !doc["results"].empty(),
             text);
  file.write(text);
  try {
    FUZZ_CHECK(xb::load_result_text(file.path()) == text, "loading is not idempotent");
  } catch (const std::exception& e) {
    FUZZ_CHECK(false && "a loaded document does not load again", e.what());
  }
  return 0;
}
