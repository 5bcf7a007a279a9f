#include "core/schema.hpp"

#include "core/corruption.hpp"
#include "core/journal.hpp"

namespace xb {

const char* to_string(FieldRole r) {
  switch (r) {
    case FieldRole::key:
      return "key";
    case FieldRole::metric:
      return "metric";
    case FieldRole::info:
      return "info";
  }
  return "?";
}

const char* to_string(FieldType t) {
  switch (t) {
    case FieldType::int64:
      return "int64";
    case FieldType::number:
      return "number";
    case FieldType::text:
      return "text";
    case FieldType::boolean:
      return "boolean";
    case FieldType::list:
      return "list";
  }
  return "?";
}

FieldType field_type_of(const FieldValue& v) {
  return std::visit([](const auto& x) { return field_type_of<std::decay_t<decltype(x)>>(); }, v);
}

const FieldSpec* RecordSchema::find(std::string_view name) const {
  for (const auto& f : fields_)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::string> RecordSchema::keys() const {
  std::vector<std::string> out;
  for (const auto& f : fields_)
    if (f.role == FieldRole::key) out.push_back(f.name);
  return out;
}

double RecordSchema::headline_value(const Record& r) const {
  if (headline_ == kGbps) return r.gbps_median;
  return r.get(FieldKey<double>{headline_}).value_or(0.0);
}

const std::vector<FieldSpec>& run_fields() {
  static const std::vector<FieldSpec> fields = {
      {std::string(kCycle.name), field_type_of<std::int64_t>(), FieldRole::info,
       "--duration, --cycles: the repetition the record belongs to (0, 1, ...)"},
      {std::string(kTUnix.name), field_type_of<double>(), FieldRole::info,
       "--duration, --cycles: wall clock at the record's end, seconds since 1970"},
      {std::string(check_field::checked_iters.name), field_type_of<std::int64_t>(), FieldRole::info,
       "--check every: the iterations whose data was checked"},
      {std::string(check_field::wrong_iters.name), field_type_of<std::int64_t>(), FieldRole::metric,
       "--check every: the checked iterations with wrong data"},
      {std::string(check_field::wrong_rate.name), field_type_of<double>(), FieldRole::metric,
       "--check every: wrong_iters / checked_iters (a fraction)"},
      {std::string(check_field::wrong_rate_lo.name), field_type_of<double>(), FieldRole::info,
       "--check every: the rate's 95 % interval, low end (Wilson score interval)"},
      {std::string(check_field::wrong_rate_hi.name), field_type_of<double>(), FieldRole::info,
       "--check every: the rate's 95 % interval, high end (0 wrong of n: at most this)"},
      {std::string(check_field::first_bad.name), field_type_of<std::string>(), FieldRole::info,
       "--check every: the first wrong place (iteration, where, offset, expected, got, xor, "
       "how many in it)"},
  };
  return fields;
}

namespace {

bool declared(const std::vector<FieldSpec>& specs, const std::string& name, FieldType type) {
  for (const auto& f : specs)
    if (f.name == name) return f.type == type;
  return false;
}

}  // namespace

std::vector<std::string> undeclared_fields(const RecordSchema& schema, const Record& r) {
  std::vector<std::string> out;
  for (const auto& [name, value] : r.extra) {
    const FieldType type = field_type_of(value);
    if (!declared(schema.fields(), name, type) && !declared(run_fields(), name, type))
      out.push_back(name);
  }
  return out;
}

}  // namespace xb
