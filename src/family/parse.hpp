#pragma once
// Parsers of option values the families share: comma lists, counts and
// device indices, --threads, --tile, --window and --duration. Each throws
// UsageError naming the option and showing a good value.
#include <algorithm>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/units.hpp"

namespace xb {

std::vector<std::string> split_list(const std::string& s);
// The items of an option's comma list, in order (a list per lane, --nic
// a,a, may repeat one); an empty value or item ("a,,b", a trailing comma)
// is a UsageError naming the option and giving `example`.
std::vector<std::string> option_list(const std::string& option, const std::string& text,
                                     const std::string& example);
// The same for a list of things to measure or check: each once, a repeat
// dropped (as -t and the collectives always did: nothing measured twice).
std::vector<std::string> option_set(const std::string& option, const std::string& text,
                                    const std::string& example);
// `v` with each item once, in the order of first appearance.
template <class T>
std::vector<T> each_once(std::vector<T> v) {
  std::vector<T> out;
  for (T& x : v)
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(std::move(x));
  return out;
}
// "4096,65536": sizes, counts, any integers.
template <class T>
std::string join_numbers(const std::vector<T>& values) {
  std::string s;
  for (const T& v : values) s += (s.empty() ? "" : ",") + std::to_string(v);
  return s;
}
// `option` (e.g. "--blocks") given `text`, a comma list of counts in
// 1..max, in order (each_once() for a set). UsageError for an empty item, a non-number or a count
// out of range; `example` shows a good value in the message.
std::vector<int> parse_count_list(const std::string& option, const std::string& text, int max,
                                  const std::string& example);
// The same for device indices (0, 1, ...).
std::vector<int> parse_index_list(const std::string& option, const std::string& text,
                                  const std::string& example);

// --threads: one count, a comma list ("1,2,4"), or "sweep" (powers of two
// up to the device's cores, resolved once the backend is known). Throws
// UsageError for an empty item, a non-number, or a count outside 1..max.
struct ThreadCounts {
  std::vector<int> values;
  bool sweep = false;
  bool list() const { return sweep || values.size() > 1; }  // records get a threads field
};
ThreadCounts parse_thread_counts(const std::string& text, int max);
// 1, 2, 4, ... up to `cores`; UsageError when the backend does not know its cores.
std::vector<int> thread_sweep(int cores, const std::string& backend);
// Once the backend is known: one count sets `copier.threads`; a list, or a
// sweep up to the most cores of its devices, goes to `runs` (one run each,
// records with a threads field).
void apply_thread_counts(const ThreadCounts& t, const Backend& b, CopierOptions& copier,
                         std::vector<int>& runs);

// --tile: a size, or 0 (direct copies, no staging tile, on GPU backends).
Bytes parse_tile(const std::string& text);
// --window (remote, engine): messages in flight per iteration, one count in
// 1..kMaxWindow. UsageError for 0, a negative, a list or a non-number.
inline constexpr int kMaxWindow = 1 << 16;
int parse_window(const std::string& text);
// --duration: "30s", "10m", "2h", "1.5h", "500ms": seconds; UsageError
// otherwise (or <= 0).
double parse_duration(const std::string& text);

}  // namespace xb
