#include "core/schema.hpp"

namespace xb {

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

}  // namespace xb
