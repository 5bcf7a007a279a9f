#include "report/prom.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace xb {

std::string prom_escape(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string prom_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

PromText::Family& PromText::find(const std::string& name) {
  for (Family& f : families_)
    if (f.name == name) return f;
  throw std::logic_error("PromText: metric " + name + " added before its family was declared");
}

void PromText::family(const std::string& name, const std::string& help, const std::string& type) {
  for (const Family& f : families_)
    if (f.name == name) return;
  families_.push_back({name, help, type, {}, {}});
}

void PromText::add(const std::string& name, const PromLabels& labels, double value) {
  Family& f = find(name);
  std::string set;
  for (const auto& [k, v] : labels)
    if (!v.empty()) set += fmt::format("{}{}=\"{}\"", set.empty() ? "" : ",", k, prom_escape(v));
  set = set.empty() ? std::string() : "{" + set + "}";
  if (std::find(f.series.begin(), f.series.end(), set) != f.series.end()) {
    ++duplicates_;
    return;
  }
  f.series.push_back(set);
  f.samples += fmt::format("{}{} {}\n", name, set, prom_value(value));
}

void PromText::add(const std::string& name, const std::string& help, const PromLabels& labels,
                   double value) {
  family(name, help);
  add(name, labels, value);
}

std::string PromText::text() const {
  std::string out;
  for (const Family& f : families_) {
    if (f.samples.empty()) continue;
    // HELP text escapes backslash and newline (not quotes).
    std::string help;
    for (char c : f.help) help += c == '\\' ? "\\\\" : c == '\n' ? "\\n" : std::string(1, c);
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}", f.name, help, f.name, f.type, f.samples);
  }
  return out;
}

}  // namespace xb
