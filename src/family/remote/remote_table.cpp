// `remote`: the table of pto-isa's TGET example, one per op: per size, each method's GB/s,
// latency and counter cycles per transfer, side by side; with --window, per
// message size, and each method's messages per second beside them.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "family/remote/remote_bench.hpp"
#include "family/remote/remote_family.hpp"
#include "report/table_kit.hpp"

namespace xb {

namespace {

std::string one_op(const std::string& op, const std::vector<const Record*>& recs,
                   const Report& rep) {
  std::vector<std::string> methods;
  std::map<Bytes, std::map<std::string, const Record*>> rows;
  for (const Record* r : recs) {
    // A --threads list run: one column group per method and thread count.
    const auto t = r->get(remote_field::threads);
    const std::string m = t ? fmt::format("{}/t{}", r->method, *t) : r->method;
    if (std::find(methods.begin(), methods.end(), m) == methods.end()) methods.push_back(m);
    rows[remote_message_size(*r)][m] = r;
  }
  // core before dma, as pto-isa's TGET example puts TGET first
  std::sort(methods.begin(), methods.end());
  const Record& f = *recs.front();
  std::string transport = "?";
  if (const auto t = f.get(remote_field::transport)) transport = *t;
  std::string counter;
  if (const FieldValue* c = find_field(rep.summary, "cycle_counter")) counter = field_text(*c);
  if (const FieldValue* hz = find_field(rep.summary, "cycle_hz");
      hz && std::holds_alternative<double>(*hz))
    counter += fmt::format(" at {:.3f} GHz", std::get<double>(*hz) / 1e9);
  const auto window = f.get(remote_field::window);
  std::string out =
      fmt::format("\nRemote {} · data rank {} -> rank {} · transport {}{} · cycles: {}\n", op,
                  f.src, f.dst, transport, window ? fmt::format(" · window {}", *window) : "",
                  counter.empty() ? "-" : counter);
  out += fmt::format("{:>12} {:>7}", "Size(Bytes)", "Iters");
  for (const auto& m : methods) {
    out += fmt::format(" {:>10} {:>10} {:>12}", m + " GB/s", m + " us", m + " cycles");
    if (window) out += fmt::format(" {:>12}", m + " Mmsg/s");
  }
  out += fmt::format(" {:>9}\n", "Check");
  for (const auto& [bytes, by_method] : rows) {
    out += fmt::format("{:>12} {:>7}", bytes, by_method.begin()->second->iters);
    std::string check;
    std::string note;
    for (const auto& m : methods) {
      auto it = by_method.find(m);
      const Record* r = it == by_method.end() ? nullptr : it->second;
      if (!r || r->iters == 0) {
        out += fmt::format(" {:>10} {:>10} {:>12}", "N/A", "N/A", "N/A");
        if (window) out += fmt::format(" {:>12}", "N/A");
        if (r) note = fmt::format("  {}: {}", to_string(r->status), r->reason);
      } else {
        out += fmt::format(" {:>10.2f} {:>10.2f} {:>12.1f}", r->gbps_median, r->time_us.median,
                           r->get_or(remote_field::cycles, 0.0));
        if (window) out += fmt::format(" {:>12.3f}", r->get_or(remote_field::msg_rate, 0.0) / 1e6);
      }
      check += (check.empty() ? "" : "/") + std::string(!r || !r->verified ? "-"
                                                        : *r->verified     ? "ok"
                                                                           : "FAIL");
    }
    out += fmt::format(" {:>9}{}\n", check, note);
  }
  return out;
}

}  // namespace

std::string remote_tables(const Report& r) {
  const CaseGroups g = group_by_case(r);
  std::string out =
      "latency = median time per transfer; cycles = mean counter cycles per transfer, read by the "
      "issuing rank\n";
  const bool windowed = std::any_of(r.results.begin(), r.results.end(),
                                    [](const Record& x) { return x.get(remote_field::window); });
  if (windowed)
    out +=
        "--window N: a transfer is N messages of the size issued back to back, then completed "
        "together; GB/s counts N x size; Mmsg/s = N / median time, in millions\n";
  for (const auto& op : g.order) out += one_op(op, g.by_case.at(op), r);
  return out;
}

}  // namespace xb
