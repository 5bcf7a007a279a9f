#pragma once
// The Prometheus text exposition format (version 0.0.4), as node_exporter's
// textfile collector reads it: a family's HELP and TYPE lines, then all of
// its samples together; label values escaped. Only formats: the families
// that offer --format prom (doctor, fleet) decide which metrics and labels.
#include <string>
#include <utility>
#include <vector>

namespace xb {

// A sample's labels, in the order written. A label with an empty value is
// left out (Prometheus reads an empty label as an absent one).
using PromLabels = std::vector<std::pair<std::string, std::string>>;

// A label value with backslash, double quote and newline escaped.
std::string prom_escape(const std::string& value);
// A sample value: shortest round-trip decimal; NaN, +Inf, -Inf spelled as
// the format wants.
std::string prom_value(double v);

// One exposition: families in the order first declared, each with its
// samples together (the format forbids interleaving them).
class PromText {
 public:
  // Declares a gauge (or `type`) family; a second declaration of the same
  // name keeps the first help.
  void family(const std::string& name, const std::string& help, const std::string& type = "gauge");
  // A sample of a declared family. A sample whose labels repeat an earlier
  // one of the same family is dropped (a duplicate series would make the
  // whole file unreadable to node_exporter) and counted in duplicates().
  void add(const std::string& name, const PromLabels& labels, double value);
  // Declares and adds in one call.
  void add(const std::string& name, const std::string& help, const PromLabels& labels,
           double value);
  std::size_t duplicates() const { return duplicates_; }
  std::string text() const;

 private:
  struct Family {
    std::string name, help, type;
    std::vector<std::string> series;  // "{labels}" per sample, to catch duplicates
    std::string samples;
  };
  Family& find(const std::string& name);
  std::vector<Family> families_;
  std::size_t duplicates_ = 0;
};

}  // namespace xb
