#pragma once
// `xferbench fleet`'s pair steps: the run's configuration, the fields of
// its pair records, and PairSteps (every rank's part of each step, the
// sides gathered, rank 0's records and figures). The pair itself is
// fleet_pairs.hpp; the verdicts fleet_judge.hpp.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/host/throttle.hpp"
#include "core/record.hpp"
#include "core/sweep.hpp"
#include "family/fleet/fleet_judge.hpp"
#include "family/fleet/fleet_pairs.hpp"
#include "family/fleet/fleet_schedule.hpp"
#include "runtime/runtime.hpp"

namespace xb {

namespace fleet_field {
inline constexpr FieldKey<std::string> src_host{"src_host"};
inline constexpr FieldKey<std::string> dst_host{"dst_host"};
inline constexpr FieldKey<std::int64_t> pass{"pass"};
inline constexpr FieldKey<std::int64_t> round{"round"};
inline constexpr FieldKey<std::int64_t> concurrency{"concurrency"};  // pairs at once; 0: all
inline constexpr FieldKey<bool> confirm{"confirm"};     // a confirmation re-measurement
inline constexpr FieldKey<double> box_s{"box_s"};       // the pair's time box
inline constexpr FieldKey<std::string> boxed{"boxed"};  // fewer transfers than asked: why
inline constexpr FieldKey<bool> reached{"reached"};     // false: the pair failed before this part
inline constexpr FieldKey<std::int64_t> rail{"rail"};   // --rails: the rail (NIC index)
inline constexpr FieldKey<std::string> nic{"nic"};  // the sender's NIC (the rail's, or the busiest)
inline constexpr FieldKey<std::int64_t> nic_tx_bytes{"nic_tx_bytes"};  // the sender's NIC sent
inline constexpr FieldKey<std::int64_t> nic_rx_bytes{"nic_rx_bytes"};  // the receiver's NIC got
inline constexpr FieldKey<std::string> nic_errors{"nic_errors"};       // error counters that grew
inline constexpr FieldKey<std::string> nic_warning{
    "nic_warning"};  // the rail's bytes took another NIC
}  // namespace fleet_field

struct FleetConfig {
  PairPlan pair;
  int passes = 1;
  int concurrency = 0;  // 0: all pairs of a round at once
  std::uint64_t seed = 1;
  FleetThresholds thresholds;
  double expected = 0;  // --expected GB/s; 0: from the NICs
  std::vector<std::string> exclude;
  bool census = true;
  double census_deadline_s = 300;  // a host's census that takes longer is a FAIL row
  bool rails = false;
  std::vector<std::string> nics;  // --rails on the host backend: rail i is nics[i]
  bool quick = false;             // --quick: random perfect matchings, not every pair
  bool flagged = false;           // --matrix flagged: only suspicious pairs keep their records
};

// --matrix auto keeps every pair's records up to this many hosts.
inline constexpr std::size_t kFullMatrixHosts = 32;
// Re-measured pairs at most at once (disjoint hosts).
inline constexpr std::size_t kConfirmBatch = 16;

// The steps of pairs, every rank its part; rank 0 keeps each step's records
// (`done`, the moment the step ends) and returns the figures.
class PairSteps {
 public:
  PairSteps(Runtime& rt, const std::vector<int>& members, const std::vector<std::string>& names,
            const FleetConfig& cfg, const std::vector<host::Throttle>& throttle,
            const Progress& progress, std::function<void(Record)> done)
      : rt_(rt),
        members_(members),
        names_(names),
        cfg_(cfg),
        throttle_(throttle),
        progress_(progress),
        done_(std::move(done)),
        buf_(cfg.pair.size, rt.rank()),
        box_(cfg.pair.deadline_s),
        tag_slots_(std::max(1, rt.max_tag() / 16 - 1)) {}

  // The pairs go over `link` (it outlives the steps), on rail `rail` of NIC
  // `nic` (records say so); by default over the runtime, no rail.
  void on_rail(PairLink& link, int rail, std::string nic) {
    link_ = &link;
    rail_ = rail;
    nic_ = std::move(nic);
  }

  // `confirm`: re-measurements, marked so in the records.
  std::vector<PairFigures> run(const std::vector<FleetStep>& steps, bool confirm);
  // Rank 0's `suspects` (broadcast), measured again in steps of disjoint
  // pairs, at most kConfirmBatch a step; every rank calls it alike.
  std::vector<PairFigures> again(const std::vector<FleetPair>& suspects);
  std::size_t confirmed() const { return confirmed_; }
  std::size_t held_back() const { return held_back_; }  // pairs --matrix flagged left out

 private:
  Runtime& rt_;
  const std::vector<int>& members_;
  const std::vector<std::string>& names_;
  const FleetConfig& cfg_;
  const std::vector<host::Throttle>& throttle_;
  const Progress& progress_;
  std::function<void(Record)> done_;
  PairBuffers buf_;
  RuntimeLink own_{rt_};
  PairLink* link_ = &own_;
  int rail_ = -1;
  std::string nic_;
  PairBox box_;
  int tag_slots_;
  int tags_ = 0;
  std::size_t confirmed_ = 0;
  PairFilter filter_{cfg_.thresholds.grade.fail_below};
  std::size_t held_back_ = 0;
};

}  // namespace xb
