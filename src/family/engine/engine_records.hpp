#pragma once
// The engine client's records (inside the engine family): a part's step, a
// part that could not measure, and a sum over parts that started each loop
// together (a server's lanes, every server). fanin_records, the fan-in
// total, is declared in engine_bench.hpp.
#include <optional>
#include <string>
#include <vector>

#include "core/corruption.hpp"
#include "core/nic_counters.hpp"
#include "core/record.hpp"
#include "core/timer.hpp"
#include "engine/ucx.hpp"
#include "family/engine/engine_bench.hpp"

namespace xb {

// A part's timed loops of one step.
struct EngineTiming {
  std::vector<double> loop_us;                  // one per timed loop: the figure
  std::vector<double> req_us;                   // per request (sync) or per batch (async)
  double submit_us = 0, wait_us = 0;            // async: sums over the batches
  std::vector<Clock::time_point> starts, ends;  // each timed loop's: a sum's time spans the parts'
  CheckTally checks;                            // --check every: each timed loop's
};

// A part's record: `bytes` of the slot moved per loop in blocks of `bs`;
// `bad` is the verification's first wrong byte (-1: none; unset: not checked).
Record engine_part_record(engine::Op op, const EngineClientConfig& cfg, EngineLane lane,
                          Bytes bytes, Bytes bs, const EngineTiming& t,
                          std::optional<std::int64_t> bad);

// A record of a part that could not measure this step.
Record engine_failed_record(engine::Op op, const EngineClientConfig& cfg, EngineLane lane,
                            Bytes bytes, Bytes bs, std::string reason);

// One part's share of a sum: its bytes and loops, or, where it failed or
// was lost, its name for the reason ("lane 1 to 10.0.0.2:20000").
struct EngineSumPart {
  Bytes length = 0;
  const EngineTiming* timing = nullptr;
  std::string broken;  // "": it measured
};

// The sum of some parts' step: their bytes over each loop's span from the
// first part's start to the last part's end (the parts start together);
// `span_us` gets those spans. A broken part fails the sum, naming it.
Record engine_sum_record(engine::Op op, const EngineClientConfig& cfg, EngineLane lane, Bytes bs,
                         const std::vector<EngineSumPart>& parts, std::vector<double>& span_us);

// A lane's NIC fields, from the NIC counters around its timed loops: its
// NIC (`asked`, from --nic; "": the NIC that moved at least half of the
// lane's `expected` bytes, none in shared memory), that NIC's bytes and the
// error counters that grew, wire GB/s (its bytes over `loops_us`, the timed
// loops' total time) and, where the bytes went through another NIC than
// asked, nic_warning. No counters for the NIC: no fields, never a guess.
// Returns the warning ("": none).
std::string set_nic_fields(Record& r, const std::vector<NicDelta>& deltas, const std::string& asked,
                           Bytes expected, double loops_us);

}  // namespace xb
