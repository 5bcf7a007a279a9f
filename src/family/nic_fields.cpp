#include "family/nic_fields.hpp"

#include <fmt/format.h>

#include <sstream>

namespace xb {

RecordSchema& add_nic_fields(RecordSchema& s, const std::string& whose) {
  return s
      .add(nic_field::nic, FieldRole::info,
           whose +
               " NIC: the one whose counters moved at least half of the bytes (absent: none "
               "did, e.g. shared memory, or no counters)")
      .add(nic_field::nic_tx_bytes, FieldRole::info,
           "bytes that NIC counted sending over the timed rounds (the host's counters: other "
           "traffic of the host counts too)")
      .add(nic_field::nic_rx_bytes, FieldRole::info, "bytes that NIC counted receiving")
      .add(nic_field::wire_gbps, FieldRole::info,
           "the larger of those two over the timed rounds' time, GB/s: the wire beside the "
           "application's figure")
      .add(nic_field::nic_errors, FieldRole::info,
           "that NIC's error counters that grew meanwhile (\"symbol_error +412\"; absent: none)");
}

std::optional<NicDelta> NicWindow::close(std::uint64_t expected) const {
  return busiest_nic(nic_deltas(before_, sample_nics({})), expected);
}

std::string nic_wire(const std::optional<NicDelta>& d) {
  if (!d) return "";
  return fmt::format("{}\t{}\t{}\t{}", d->nic, d->tx_bytes, d->rx_bytes, nic_errors_text(*d));
}

NicWire parse_nic_wire(const std::string& text) {
  NicWire w;
  std::istringstream in(text);
  std::getline(in, w.nic, '\t');
  in >> w.tx_bytes >> w.rx_bytes;
  in.ignore(1);
  std::getline(in, w.errors);
  return w;
}

void set_nic_fields(Record& r, const NicDelta& d, double seconds) {
  r.set(nic_field::nic, d.nic);
  r.set(nic_field::nic_tx_bytes, static_cast<std::int64_t>(d.tx_bytes));
  r.set(nic_field::nic_rx_bytes, static_cast<std::int64_t>(d.rx_bytes));
  if (seconds > 0) r.set(nic_field::wire_gbps, static_cast<double>(nic_moved(d)) / seconds / 1e9);
  if (const std::string e = nic_errors_text(d); !e.empty()) r.set(nic_field::nic_errors, e);
}

}  // namespace xb
