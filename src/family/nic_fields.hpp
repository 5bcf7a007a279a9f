#pragma once
// A record's NIC evidence (core/nic_counters.hpp) for the families whose
// bytes may cross a NIC without naming it (kv, coll): the NIC whose
// counters moved the bytes of a measured region, its bytes, wire GB/s beside
// the application's, and the error counters that grew. No counters, or no
// NIC (shared memory): no fields, never a guess.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/nic_counters.hpp"
#include "core/record.hpp"
#include "core/schema.hpp"

namespace xb {

namespace nic_field {
inline constexpr FieldKey<std::string> nic{"nic"};
inline constexpr FieldKey<std::int64_t> nic_tx_bytes{"nic_tx_bytes"};
inline constexpr FieldKey<std::int64_t> nic_rx_bytes{"nic_rx_bytes"};
inline constexpr FieldKey<double> wire_gbps{"wire_gbps"};
inline constexpr FieldKey<std::string> nic_errors{"nic_errors"};
}  // namespace nic_field

// Declares the fields in a family's schema; `whose`: "this rank's", ...
RecordSchema& add_nic_fields(RecordSchema& s, const std::string& whose);

// Every NIC's counters around a measured region of this process.
class NicWindow {
 public:
  void open() { before_ = sample_nics({}); }
  // The NIC that moved at least half of `expected` bytes since open(),
  // and its delta; nullopt where none did (shared memory, no counters).
  std::optional<NicDelta> close(std::uint64_t expected) const;

 private:
  std::vector<NicSample> before_;
};

// One rank's busiest NIC as it travels in an allgather ("NIC\tTX\tRX\tERRORS",
// "" where none moved its share), and back (an empty nic: none).
struct NicWire {
  std::string nic;
  std::uint64_t tx_bytes = 0, rx_bytes = 0;
  std::string errors;  // nic_errors_text
};
std::string nic_wire(const std::optional<NicDelta>& d);
NicWire parse_nic_wire(const std::string& text);

// `d`'s fields on `r`; wire GB/s: the larger of its bytes sent and
// received over `seconds`.
void set_nic_fields(Record& r, const NicDelta& d, double seconds);

}  // namespace xb
