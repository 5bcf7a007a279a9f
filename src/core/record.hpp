#pragma once
// Record: one measured (or waived, or failed) case. Benchmarks emit records;
// reporters only format them.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "core/stats.hpp"
#include "core/units.hpp"

namespace xb {

enum class Status { ok, waived, failed };
const char* to_string(Status s);

// A family-specific field (coll: busbw, remote: cycles, ...), kept in order.
// Lists come last: the wire format stores the index.
using FieldValue = std::variant<std::int64_t, double, std::string, bool, std::vector<std::int64_t>,
                                std::vector<double>>;
using Field = std::pair<std::string, FieldValue>;

// The typed name of a family field: a family declares its keys once, in a
// namespace of its own (coll_bench.hpp: `coll_field::busbw`, a
// `FieldKey<double>{"busbw"}`), declares each in its schema, and reads and
// writes records only through them, so a field has one name and one type.
template <class T>
struct FieldKey {
  static_assert(std::is_same_v<T, std::int64_t> || std::is_same_v<T, double> ||
                    std::is_same_v<T, std::string> || std::is_same_v<T, bool> ||
                    std::is_same_v<T, std::vector<std::int64_t>> ||
                    std::is_same_v<T, std::vector<double>>,
                "a field is an int64, a double, a string, a bool or a list of numbers");
  using type = T;
  std::string_view name;
};

struct Record {
  std::string kase;    // "h2d", "d2h", "d2d", "p2p", "p2p_bidir", ...
  std::string method;  // "dma", "core", ...
  int src = -1;        // device ids, -1 for the host
  int dst = -1;
  Bytes bytes = 0;  // bytes moved per iteration, counted once
  int iters = 0;
  Status status = Status::ok;
  std::string reason;
  std::optional<bool> verified;  // nullopt: not checked (--no-check, waived)
  Stats time_us;
  double gbps_median = 0;
  double gbps_max = 0;
  std::vector<Field> extra;  // family fields in the family's order (JSON keeps it)

  // Sets a family field: replaces it in place, or appends it.
  template <class T, class V>
  void set(FieldKey<T> key, V&& value) {
    for (auto& [k, v] : extra)
      if (k == key.name) {
        v = T(std::forward<V>(value));
        return;
      }
    extra.emplace_back(std::string(key.name), T(std::forward<V>(value)));
  }
  // The field's value, or nullopt when the record lacks it (or holds
  // another type under that name: a record read from an unknown writer).
  template <class T>
  std::optional<T> get(FieldKey<T> key) const {
    for (const auto& [k, v] : extra)
      if (k == key.name && std::holds_alternative<T>(v)) return std::get<T>(v);
    return std::nullopt;
  }
  template <class T>
  T get_or(FieldKey<T> key, T missing) const {
    return get(key).value_or(std::move(missing));
  }

  // Fills time_us and gbps_* from raw per-iteration samples.
  void set_samples(std::span<const double> samples_us);
  // Same from statistics already computed (e.g. aggregated over ranks).
  void set_stats(const Stats& t, int iterations);
  static Record waived(std::string kase, std::string method, int src, int dst, Bytes bytes,
                       std::string reason);
};

// Records on the wire between ranks (any rank's records reach rank 0,
// which reports). Lossless for every field, extra fields included.
std::string records_to_wire(const std::vector<Record>& records);
std::vector<Record> records_from_wire(const std::string& wire);

// What the run was on; filled by the CLI from the backend and the system.
struct DeviceSummary {
  int id = 0;
  std::string name;
  int numa = -1;
  // NVML's spellings where the backend knows them (the Prometheus labels
  // `pci_bus_id` and `UUID`); not written to JSON.
  std::string pci_bus_id{}, uuid{};
};

struct EnvInfo {
  std::string host;
  std::string cpu;
  int cores = 0;
  std::string backend;
  std::vector<DeviceSummary> devices;
  int ranks = 1;
  std::string backend_note;  // why `auto` passed other backends over, or ""
  // The software the run used, name and version, in order: mpi, ucx, hwloc,
  // kernel, os, then the backend's (cuda: driver, runtime, nccl, cublas).
  std::vector<std::pair<std::string, std::string>> software;
};

// Ordered key/value parameters of the run, echoed into the report.
using Params = std::vector<Field>;

}  // namespace xb
