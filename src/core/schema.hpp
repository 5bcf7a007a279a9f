#pragma once
// A family's record schema: the fields it adds to its records, each with its
// type, role and meaning. `compare` matches records by the key fields,
// `--min-bw` and `compare` judge the headline metric. The JSON and CSV
// writers write each record's fields in the order the family set them;
// `xferbench <family> --fields` and `list --format json` print the schema.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/record.hpp"

namespace xb {

enum class FieldRole {
  key,     // part of a record's identity (compare matches on it): coll's dtype
  metric,  // a measured figure: coll's busbw, remote's cycles
  info,    // anything else: a count, a verdict
};
enum class FieldType { int64, number, text, boolean, list };  // list: of numbers
// "key", "metric", "info"; "int64", "number", "text", "boolean", "list".
const char* to_string(FieldRole r);
const char* to_string(FieldType t);
// The type of a field's value as a record holds it.
FieldType field_type_of(const FieldValue& v);

struct FieldSpec {
  std::string name;
  FieldType type = FieldType::number;
  FieldRole role = FieldRole::info;
  std::string help;  // one line: what it is and its unit
};

template <class T>
constexpr FieldType field_type_of() {
  if constexpr (std::is_same_v<T, std::int64_t>) return FieldType::int64;
  if constexpr (std::is_same_v<T, double>) return FieldType::number;
  if constexpr (std::is_same_v<T, std::string>) return FieldType::text;
  if constexpr (std::is_same_v<T, bool>) return FieldType::boolean;
  return FieldType::list;
}

class RecordSchema {
 public:
  // The headline metric of records without one of their own: median GB/s.
  static constexpr std::string_view kGbps = "gbps";

  explicit RecordSchema(std::string family) : family_(std::move(family)) {}

  template <class T>
  RecordSchema& add(FieldKey<T> key, FieldRole role, std::string help) {
    fields_.push_back({std::string(key.name), field_type_of<T>(), role, std::move(help)});
    return *this;
  }
  // `compare` and `--min-bw` judge this metric (a double field), not GB/s.
  RecordSchema& headline(FieldKey<double> key) {
    headline_ = std::string(key.name);
    return *this;
  }

  const std::string& family() const { return family_; }
  const std::vector<FieldSpec>& fields() const { return fields_; }
  const FieldSpec* find(std::string_view name) const;
  std::vector<std::string> keys() const;  // names of the key fields, in order
  // "gbps" (the record's median GB/s) or a metric field's name.
  const std::string& headline_name() const { return headline_; }
  // The headline figure of a record: its metric field, or its median GB/s.
  double headline_value(const Record& r) const;

 private:
  std::string family_;
  std::vector<FieldSpec> fields_;
  std::string headline_{kGbps};
};

// The fields the run adds to any family's records: a run repeated with
// --duration or --cycles stamps each with its cycle and the wall clock at its
// end (core/journal.hpp).
const std::vector<FieldSpec>& run_fields();

// The fields `r` carries that neither `schema` nor run_fields() declares
// with that type, in the record's order. A field left out of the schema is
// invisible to `compare` and `--fields`: a non-empty answer is a bug in the
// family.
std::vector<std::string> undeclared_fields(const RecordSchema& schema, const Record& r);

}  // namespace xb
