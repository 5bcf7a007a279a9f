#include "core/registry.hpp"

#include <stdexcept>

namespace xb {

void Registry::add(BenchmarkDef def) {
  if (find(def.key)) throw std::logic_error("duplicate benchmark key: " + def.key);
  if (!def.filter) def.filter = [](const Capabilities&) { return Support::yes(); };
  defs_.push_back(std::move(def));
}

const BenchmarkDef* Registry::find(const std::string& key) const {
  for (const auto& d : defs_)
    if (d.key == key) return &d;
  return nullptr;
}

}  // namespace xb
