#pragma once
// `xferbench compare`: matches the records of two result files by their
// keys and flags regressions past a threshold (a CI gate).
#include <functional>
#include <string>
#include <vector>

#include "core/schema.hpp"

namespace xb {

struct CompareRow {
  std::string key;     // "copy d2d dma 0->0 268435456"
  std::string metric;  // the headline: "gbps" (median GB/s) or a field ("busbw")
  double old_value = 0;
  double new_value = 0;
  double ratio = 0;  // new / old
  bool regression = false;
  // Wrong data in either file ("WRONG DATA 0/2000 -> 26/2000", "wrong data
  // 3/50 -> 0/50 (now right)"; "" when both were right): new wrong data
  // (`wrong_data`) is a regression whatever its speed.
  std::string wrong;
  bool wrong_data = false;
};

struct Comparison {
  std::vector<CompareRow> rows;
  std::vector<std::string> only_old, only_new;  // unmatched keys
  // env.software entries that differ: "mpi: MPICH 4.0.2 -> Open MPI v4.1.4".
  std::vector<std::string> software_changed;
  int regressions = 0;
};

// Parses and checks a result document. Throws UsageError with one line for a
// missing or unreadable file, non-JSON, another schema, no results, or a
// field of the wrong type (every record needs a "case" string).
std::string load_result_text(const std::string& path);
// Whether the file is --format jsonl (its first line a jsonl head).
bool is_jsonl_file(const std::string& path);

// The schema of a command's records, or nullptr for a command this build
// does not know (its records then match on the common fields only).
using SchemaLookup = std::function<const RecordSchema*(const std::string& command)>;

// threshold: fractional drop that counts (0.05 = 5%). Records match on the
// common identity (case, method, src, dst, bytes) and the family's key
// fields; the metric is the family's headline. Throws UsageError for
// documents of different commands.
Comparison compare_results(const std::string& old_path, const std::string& new_path,
                           double threshold, const SchemaLookup& schema_of);
std::string format_comparison(const Comparison& c, double threshold);

// "5%" or "0.05" -> 0.05. Throws UsageError.
double parse_threshold(const std::string& text);

}  // namespace xb
