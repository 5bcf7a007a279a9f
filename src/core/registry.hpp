#pragma once
// The benchmark registry: every case a family can run ("copy.h2d",
// "coll.allreduce") is declared once, by its family (Family::cases), with a
// key, a description and a capability filter; `list` shows each one as runs
// or waived with the reason. Registration is explicit, never through static
// initialisers.
#include <functional>
#include <string>
#include <vector>

namespace xb {

// Whether something can run here, and if not, why (the `waived` reason).
struct Support {
  bool ok = true;
  std::string reason;
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

// What the selected backend offers, as plain values (core knows no devices).
struct Capabilities {
  std::string backend;
  int devices = 0;
  bool device_ipc = false;  // device memory shared between processes (remote windows)
};

struct BenchmarkDef {
  std::string key;  // "copy.h2d"
  std::string family;
  std::string description;
  std::function<Support(const Capabilities&)> filter;
};

class Registry {
 public:
  // Throws std::logic_error on a duplicate key: a programming error.
  void add(BenchmarkDef def);
  const BenchmarkDef* find(const std::string& key) const;
  const std::vector<BenchmarkDef>& all() const { return defs_; }

 private:
  std::vector<BenchmarkDef> defs_;
};

}  // namespace xb
