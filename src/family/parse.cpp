#include "family/parse.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace xb {

double parse_duration(const std::string& text) {
  const auto bad = [&] {
    return UsageError(
        fmt::format("--duration '{}': give a positive time like 30s, 10m, 2h or 500ms", text));
  };
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  const std::string unit = text.substr(used);
  const double scale = unit == "ms"                  ? 1e-3
                       : unit == "s" || unit.empty() ? 1
                       : unit == "m"                 ? 60
                       : unit == "h"                 ? 3600
                                                     : -1;
  if (scale < 0 || !(v > 0) || text[0] == '+' || std::isinf(v)) throw bad();
  return v * scale;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const auto comma = s.find(',', start);
    const auto item =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> option_list(const std::string& option, const std::string& text,
                                     const std::string& example) {
  if (text.empty()) throw UsageError(fmt::format("{}: an empty value (give {})", option, example));
  if (text.front() == ',' || text.back() == ',' || text.find(",,") != std::string::npos)
    throw UsageError(fmt::format("{} '{}': an empty item (give {})", option, text, example));
  return split_list(text);
}

std::vector<std::string> option_set(const std::string& option, const std::string& text,
                                    const std::string& example) {
  return each_once(option_list(option, text, example));
}

ThreadCounts parse_thread_counts(const std::string& text, int max) {
  ThreadCounts c;
  if (text == "sweep") {
    c.sweep = true;
    return c;
  }
  c.values = each_once(parse_count_list("--threads", text, max, "4, 1,2,4 or sweep"));
  return c;
}

namespace {

// The integers of a comma list, each in [min, max]; `what` names one in
// messages ("a positive count", "a device index").
std::vector<int> parse_int_list(const std::string& option, const std::string& text, int min,
                                int max, const char* what, const std::string& example) {
  std::vector<int> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    if (item.empty())
      throw UsageError(fmt::format("{} '{}': an empty item (a list is like 1,2,4)", option, text));
    std::size_t used = 0;
    long v = -1;
    try {
      v = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item[0] == '+' || item[0] == '-' || v < min)
      throw UsageError(
          fmt::format("{} '{}': '{}' is not {} (give {})", option, text, item, what, example));
    if (v > max)
      throw UsageError(fmt::format("{} {}: more than the {} allowed", option, item, max));
    out.push_back(static_cast<int>(v));
    if (comma == text.size()) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::vector<int> parse_count_list(const std::string& option, const std::string& text, int max,
                                  const std::string& example) {
  return parse_int_list(option, text, 1, max, "a positive count", example);
}

std::vector<int> parse_index_list(const std::string& option, const std::string& text,
                                  const std::string& example) {
  return parse_int_list(option, text, 0, 1 << 20, "a device index", example);
}

std::vector<int> thread_sweep(int cores, const std::string& backend) {
  if (cores < 1)
    throw UsageError(fmt::format(
        "--threads sweep: the {} backend does not say how many cores its devices have; give a "
        "list",
        backend));
  std::vector<int> out;
  for (int t = 1; t <= cores; t *= 2) out.push_back(t);
  return out;
}

void apply_thread_counts(const ThreadCounts& t, const Backend& b, CopierOptions& copier,
                         std::vector<int>& runs) {
  std::vector<int> values = t.values;
  if (t.sweep) {
    int cores = 0;
    for (const auto& d : b.devices()) cores = std::max(cores, d.cores);
    values = thread_sweep(cores, b.name());
  }
  if (t.list())
    runs = values;
  else if (!values.empty())
    copier.threads = values.front();
}

Bytes parse_tile(const std::string& text) {
  return text == "0" ? 0 : parse_size(text, "--tile size");
}

int parse_window(const std::string& text) {
  if (text.empty()) throw UsageError("--window needs a count (give 64)");
  if (text.find(',') != std::string::npos)
    throw UsageError(fmt::format("--window '{}': one count, not a list (give 64)", text));
  return parse_count_list("--window", text, kMaxWindow, "64")[0];
}

}  // namespace xb
