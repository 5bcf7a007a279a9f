// `topo` and `list` output: tables for people, JSON for tools.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.hpp"
#include "report/json_common.hpp"
#include "report/report.hpp"

namespace xb {
namespace {

ojson topo_json(const TopoView& t, const EnvInfo& env) {
  const Topology& m = t.machine;
  ojson doc = document_head("topo", env);
  ojson nodes = ojson::array(), caches = ojson::array(), pci = ojson::array();
  for (const auto& n : m.nodes)
    nodes.push_back({{"os_index", n.os_index}, {"memory", n.memory}, {"cpus", n.cpus}});
  for (const auto& c : m.caches)
    caches.push_back({{"level", c.depth}, {"type", c.type}, {"size", c.size}, {"count", c.count}});
  for (const auto& p : m.pci)
    pci.push_back({{"address", p.address},
                   {"kind", p.kind},
                   {"vendor", fmt::format("{:04x}", p.vendor)},
                   {"device", fmt::format("{:04x}", p.device)},
                   {"name", p.name},
                   {"numa", p.numa},
                   {"link", p.link}});
  const std::size_t nn = m.nodes.size();
  ojson dist = ojson::array();
  for (std::size_t i = 0; i < nn && m.distances.size() == nn * nn; ++i)
    dist.push_back(
        std::vector<std::uint64_t>(m.distances.begin() + static_cast<long>(i * nn),
                                   m.distances.begin() + static_cast<long>((i + 1) * nn)));
  const std::size_t nd = t.device_names.size();
  ojson links = ojson::array();
  for (std::size_t i = 0; i < nd; ++i)
    links.push_back(std::vector<std::string>(t.links.begin() + static_cast<long>(i * nd),
                                             t.links.begin() + static_cast<long>((i + 1) * nd)));
  doc["topo"] = {{"packages", m.packages},
                 {"cores", m.cores},
                 {"pus", m.pus},
                 {"cpu", m.cpu_model},
                 {"numa_nodes", nodes},
                 {"caches", caches},
                 {"pci", pci},
                 {"numa_distances", dist},
                 {"numa_distance_source", m.distance_source},
                 {"backend", t.backend},
                 {"devices", t.device_names},
                 {"links", links}};
  return doc;
}

std::string topo_table(const TopoView& t) {
  const Topology& m = t.machine;
  std::string out =
      fmt::format("CPU: {} · {} package{}, {} cores, {} hardware threads\n", m.cpu_model,
                  m.packages, m.packages == 1 ? "" : "s", m.cores, m.pus);
  out += "\nNUMA nodes\n";
  out += fmt::format("{:>6} {:>14} {}\n", "node", "memory", "cpus");
  for (const auto& n : m.nodes)
    out += fmt::format("{:>6} {:>14} {}\n", n.os_index, format_capacity(n.memory), n.cpus);
  out += "\nCaches\n";
  for (const auto& c : m.caches)
    out += fmt::format("  L{} {:<11} {:>10} x {}\n", c.depth, c.type, format_size(c.size), c.count);
  out += "\nPCI devices\n";
  if (m.pci.empty()) out += "  (none reported)\n";
  for (const auto& p : m.pci)
    out += fmt::format("  {} {:<14} {:04x}:{:04x} numa {:>2} {}{}\n", p.address, p.kind, p.vendor,
                       p.device, p.numa, p.name, p.link.empty() ? "" : " · " + p.link);
  const std::size_t nn = m.nodes.size();
  out += fmt::format("\nNUMA distance matrix ({})\n", m.distance_source);
  if (m.distances.size() == nn * nn) {
    out += fmt::format("{:>6}", "");
    for (const auto& n : m.nodes) out += fmt::format(" {:>6}", n.os_index);
    out += "\n";
    for (std::size_t i = 0; i < nn; ++i) {
      out += fmt::format("{:>6}", m.nodes[i].os_index);
      for (std::size_t j = 0; j < nn; ++j) out += fmt::format(" {:>6}", m.distances[i * nn + j]);
      out += "\n";
    }
  }
  const std::size_t nd = t.device_names.size();
  out += fmt::format("\nDevices of the {} backend\n", t.backend);
  for (std::size_t i = 0; i < nd; ++i) out += fmt::format("  {:>3}  {}\n", i, t.device_names[i]);
  out += "\nDevice link matrix (what p2p between the pair goes through)\n";
  for (std::size_t i = 0; i < nd; ++i)
    for (std::size_t j = 0; j < nd; ++j)
      if (i != j) out += fmt::format("  {} -> {}: {}\n", i, j, t.links[i * nd + j]);
  if (nd < 2) out += "  (one device: no pairs)\n";
  return out;
}

ojson fields_json(const std::vector<FieldSpec>& specs) {
  ojson fields = ojson::array();
  for (const auto& f : specs)
    fields.push_back({{"name", f.name},
                      {"type", to_string(f.type)},
                      {"role", to_string(f.role)},
                      {"help", f.help}});
  return fields;
}

std::string fields_rows(const std::vector<FieldSpec>& specs, std::size_t width) {
  std::string out;
  for (const auto& f : specs)
    out += fmt::format("  {:<{}}  {:<7}  {:<6}  {}\n", f.name, width, to_string(f.type),
                       to_string(f.role), f.help);
  return out;
}

}  // namespace

std::string format_fields(const RecordSchema& s) {
  std::size_t width = 5;
  for (const auto* specs : {&s.fields(), &run_fields()})
    for (const auto& f : *specs) width = std::max(width, f.name.size());
  std::string out = fmt::format("Fields of {} records, after the ones every record has:\n  {}\n\n",
                                s.family(), fmt::join(kCommonFields, ", "));
  out += fmt::format("  {:<{}}  {:<7}  {:<6}  {}\n", "field", width, "type", "role", "meaning");
  out += s.fields().empty() ? "  (none)\n" : fields_rows(s.fields(), width);
  out += "\nAdded by the run to any command's records:\n" + fields_rows(run_fields(), width);
  out += fmt::format(
      "\nkey: part of a record's identity for compare; metric: a measured figure.\n"
      "compare and --min-bw judge {}.\n",
      s.headline_name() == RecordSchema::kGbps ? "the median GB/s (gbps)" : s.headline_name());
  return out;
}

std::string format_topo(const TopoView& t, const EnvInfo& env, Format f) {
  if (f != Format::table && f != Format::json)
    throw UsageError("topo supports --format table or json");
  if (f == Format::json) return topo_json(t, env).dump(2) + "\n";
  return topo_table(t);
}

std::string format_list(const ListView& l, const EnvInfo& env, Format f) {
  if (f != Format::table && f != Format::json)
    throw UsageError("list supports --format table or json");
  if (f == Format::json) {
    ojson doc = document_head("list", env);
    ojson backends = ojson::array(), benches = ojson::array();
    for (const auto& b : l.backends)
      backends.push_back({{"name", b.name},
                          {"available", b.available},
                          {"broken", b.broken},
                          {"reason", b.reason}});
    for (const auto& b : l.benchmarks)
      benches.push_back({{"key", b.key},
                         {"family", b.family},
                         {"description", b.description},
                         {"runnable", b.runnable},
                         {"reason", b.reason}});
    doc["backends"] = backends;
    doc["selected"] = l.selected;
    doc["devices"] = l.device_names;
    doc["benchmarks"] = benches;
    doc["common_fields"] = kCommonFields;
    doc["run_fields"] = fields_json(run_fields());
    ojson families = ojson::array();
    for (const auto& s : l.schemas)
      families.push_back({{"name", s.family()},
                          {"headline", s.headline_name()},
                          {"fields", fields_json(s.fields())}});
    doc["families"] = families;
    return doc.dump(2) + "\n";
  }
  std::string out = "Backends\n";
  for (const auto& b : l.backends)
    out += fmt::format("  {:<8} {:<13} {}\n", b.name,
                       b.available ? "available"
                       : b.broken  ? "BROKEN"
                                   : "unavailable",
                       b.reason);
  out += fmt::format("\nDevices ({} backend)\n", l.selected);
  for (std::size_t i = 0; i < l.device_names.size(); ++i)
    out += fmt::format("  {:>3}  {}\n", i, l.device_names[i]);
  std::size_t width = 10;
  for (const auto& b : l.benchmarks) width = std::max(width, b.key.size());
  out += "\nBenchmarks\n";
  std::string family;
  for (const auto& b : l.benchmarks) {
    if (b.family != family && !family.empty()) out += "\n";
    family = b.family;
    out += fmt::format("  {:<{}} {:<6} {}{}\n", b.key, width, b.runnable ? "runs" : "waived",
                       b.description, b.runnable ? "" : " (" + b.reason + ")");
  }
  return out;
}

}  // namespace xb
