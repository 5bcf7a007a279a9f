#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "report/report.hpp"

namespace xb {
namespace {

std::string quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string value_text(const FieldValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return quote(x);
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>> ||
                             std::is_same_v<T, std::vector<double>>) {
          return fmt::format("{}", fmt::join(x, ";"));  // one cell: numbers split by ';'
        } else if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else {
          return fmt::format("{}", x);
        }
      },
      v);
}

}  // namespace

std::string format_csv(const Report& r) {
  std::vector<std::string> extra_keys;
  for (const auto& rec : r.results)
    for (const auto& [k, v] : rec.extra)
      if (std::find(extra_keys.begin(), extra_keys.end(), k) == extra_keys.end())
        extra_keys.push_back(k);
  std::string out =
      "command,case,method,src,dst,bytes,iters,status,reason,verified,time_us_min,time_us_median,"
      "time_us_mean,time_us_max,time_us_p99,time_us_cv,gbps_median,gbps_max";
  for (const auto& k : extra_keys) out += "," + k;
  out += "\n";
  for (const auto& x : r.results) {
    const Stats& t = x.time_us;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", quote(r.command),
                       quote(x.kase), quote(x.method), x.src, x.dst, x.bytes, x.iters,
                       to_string(x.status), quote(x.reason),
                       x.verified ? (*x.verified ? "true" : "false") : "", t.min, t.median, t.mean,
                       t.max, t.p99, t.cv, x.gbps_median, x.gbps_max);
    for (const auto& k : extra_keys) {
      out += ",";
      for (const auto& [ek, ev] : x.extra)
        if (ek == k) out += value_text(ev);
    }
    out += "\n";
  }
  return out;
}

}  // namespace xb
