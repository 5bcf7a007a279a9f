#pragma once
// `xferbench doctor`: one command that measures every path of the machine,
// holds each figure against what its link should give, and names what is wrong.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/record.hpp"
#include "core/sweep.hpp"
#include "family/doctor/doctor_checks.hpp"
#include "family/family.hpp"

namespace xb {

class Backend;

std::unique_ptr<Family> make_doctor_family();

// The fields of a verdict record (doctor's rows, fleet's findings).
namespace doctor_field {
inline constexpr FieldKey<std::string> verdict{"verdict"};
inline constexpr FieldKey<double> measured{"measured"};
inline constexpr FieldKey<double> expected{"expected"};
inline constexpr FieldKey<double> ratio{"ratio"};
inline constexpr FieldKey<std::string> unit{"unit"};
inline constexpr FieldKey<std::string> why{"why"};
}  // namespace doctor_field

// A finding as a record: case = check, method = where, the verdict fields;
// a FAIL is a failed record (its why the reason), so exit codes follow.
Record finding_record(const Finding& f, Bytes size);

// doctor's outputs from its records (doctor_table.cpp): the verdict table,
// its note, and the Prometheus text.
std::string doctor_tables(const Report& r);
// The verdict table of findings records, doctor's and fleet's: a row per
// record that `keep` accepts (Check, Where, Verdict, Measured, Expected,
// Ratio, Why; `figure` formats measured and expected), then the count of
// verdicts.
struct VerdictTableLayout {
  int check_width = 10, where_width = 24;
  std::string (*figure)(double) = nullptr;
};
std::string verdict_table(const std::vector<Record>& results,
                          const std::function<bool(const Record&)>& keep,
                          const VerdictTableLayout& layout);
std::string doctor_table_note(const Report& r);
std::string doctor_prometheus(const Report& r);

// doctor's local checks at the --quick depth (copies of every device and
// direction, both directions at once, links, NUMA, devices and pairs; no
// latency, engine, noise, clocks or ranks), for
// fleet's census: every host judges itself the way `doctor --quick` does.
std::vector<Finding> doctor_census(Backend& backend, const Progress& progress);

}  // namespace xb
