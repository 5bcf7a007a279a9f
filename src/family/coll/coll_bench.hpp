#pragma once
// `xferbench coll`: collective bandwidth with nccl-tests' conventions. One
// harness owns sizes, placement, warm-up, timing, aggregation over ranks,
// the slowest rank and checking; each collective is one row of the table in
// coll/collectives.cpp (byte model, bus factor, exact result, call).
#include <functional>
#include <vector>

#include "backend/backend.hpp"
#include "coll/communicator.hpp"
#include "coll/verify.hpp"
#include "core/record.hpp"
#include "core/registry.hpp"
#include "family/coll/coll_ranks.hpp"
#include "runtime/runtime.hpp"

namespace xb {

// The fields coll adds to its records.
namespace coll_field {
inline constexpr FieldKey<std::string> op{"op"};
inline constexpr FieldKey<std::string> dtype{"dtype"};
inline constexpr FieldKey<std::string> redop{"redop"};
inline constexpr FieldKey<std::int64_t> count{"count"};
inline constexpr FieldKey<bool> inplace{"inplace"};
inline constexpr FieldKey<double> algbw{"algbw"};
inline constexpr FieldKey<double> busbw{"busbw"};
inline constexpr FieldKey<std::int64_t> wrong{"wrong"};
// --check every with wrong data: the ranks that saw it and their wrong
// iterations ("rank 1 (vm2): 23; rank 3 (vm4): 1").
inline constexpr FieldKey<std::string> wrong_ranks{"wrong_ranks"};
// alltoallv: the skew and the elements each rank sent each rank, sender-major.
inline constexpr FieldKey<std::string> skew{"skew"};
inline constexpr FieldKey<std::vector<std::int64_t>> pair_counts{"pair_counts"};
// The rank the others waited for (coll_ranks.hpp), with two or more ranks.
inline constexpr FieldKey<std::int64_t> slowest_rank{"slowest_rank"};
inline constexpr FieldKey<std::string> slowest_host{"slowest_host"};
inline constexpr FieldKey<double> rank_spread{"rank_spread"};
inline constexpr FieldKey<double> slowest_share{"slowest_share"};
// --samples: each rank's median own time, and every iteration's time and
// time inside the call, rank-major (rank r's iteration i at r * iters + i).
inline constexpr FieldKey<std::vector<double>> rank_median_us{"rank_median_us"};
inline constexpr FieldKey<std::vector<double>> samples_us{"samples_us"};
inline constexpr FieldKey<std::vector<double>> in_call_us{"in_call_us"};
// Ranks on several hosts: each rank's busiest NIC over the timed calls
// (core/nic_counters.hpp), rank by rank ("" where none moved bytes), its
// counted bytes, the median over the ranks of their wire GB/s, and the
// error counters that grew ("rank 1 (vm2) mlx5_0:1: symbol_error +412").
inline constexpr FieldKey<std::string> rank_nics{"rank_nics"};
inline constexpr FieldKey<std::vector<std::int64_t>> rank_nic_tx_bytes{"rank_nic_tx_bytes"};
inline constexpr FieldKey<std::vector<std::int64_t>> rank_nic_rx_bytes{"rank_nic_rx_bytes"};
inline constexpr FieldKey<double> wire_gbps{"wire_gbps"};
inline constexpr FieldKey<std::string> nic_errors{"nic_errors"};
}  // namespace coll_field

struct CollConfig {
  std::vector<CollOp> ops{CollOp::allreduce};
  Skew skew{};  // alltoallv's per-pair counts
  std::vector<DType> dtypes{DType::float32};
  std::vector<RedOp> redops{RedOp::sum};
  std::vector<Bytes> sizes;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  // --check every: each timed call alone from a barrier, checked after it
  // (time_checked); the records get the rate and the ranks with wrong data.
  bool check_every = false;
  int root = 0;
  bool outofplace = true;
  bool inplace = true;
  TimeAgg agg = TimeAgg::max;
  bool graph = false;    // --graph: timed iterations captured in a CUDA graph and replayed
  bool samples = false;  // --samples: every iteration of every rank in the records
  // Test only (XFERBENCH_TEST_SLOW_RANK=R:US): rank `slow_rank` sleeps
  // `slow_us` before each timed call, inside its iteration.
  int slow_rank = -1;
  double slow_us = 0;
  // Test seam: sees this rank's received elements (host copy) before they
  // are checked; tests corrupt one to prove #wrong counts it.
  std::function<void(const CollCase&, void* recv_host, std::size_t count)> before_check;
};

// The timed iterations of a library on a device stream: enqueued back to
// back with a mark between each, one synchronize at the end, then each
// iteration's device time (us), completion to completion. The first launch's
// latency and the synchronize stay out of the figures; nccl-tests instead
// times the host around all launches and the synchronize and divides by the
// iterations (its mean, averaged over ranks: compare time_us.mean with
// `-a avg`, as bench/nccl_vs_nccl_tests.sh does). median/p99/CV keep their
// per-iteration meaning.
// With `graph`, the iterations and marks are captured into a graph first and
// replayed (nccl-tests -G); UsageError where the library cannot. `call(i)`
// queues iteration i.
std::vector<double> time_on_stream(Communicator& comm, StreamMarks& marks,
                                   const std::function<void(int)>& call, int iters,
                                   bool graph = false);

// nccl-tests' buffer rotation (startColl's shift): iteration i of a size
// runs `at(i)` bytes into the buffer sized for the sweep's largest size,
// stepping by what one call touches (`used`, rounded up to 256 B to keep
// the library's alignment) and wrapping where the buffer ends, so the small
// sizes of a sweep do not find their data in the device's L2 or the CPU's
// caches from the iteration before. One step (no rotation) at the largest
// size, as there. Only for the stream libraries (NCCL, HCCL), whose peer
// is nccl-tests; MPI reuses one buffer, as OSU and IMB do.
struct Rotation {
  Bytes step = 0;
  std::size_t steps = 1;
  Bytes at(int iter) const { return step * (static_cast<std::size_t>(iter) % steps); }
};
Rotation rotation(Bytes used, Bytes capacity);
// Which clock times `comm`'s collectives, in words (the table says it).
std::string timed_by(const Communicator& comm);

// Whether a record names its slowest rank (is_straggler on its fields).
bool names_straggler(const Record& r);

// Declares coll.<collective> for `list`.
void register_coll(Registry& registry);

// Same on every rank (depends only on options and the rank count): throws
// UsageError for a root out of range or a size the collective cannot split.
// With `comm`, also that it can do what cfg asks (--graph needs a stream).
void validate_coll(int nranks, const CollConfig& cfg, Communicator* comm = nullptr);

// The memory the buffers of the largest (collective, dtype) need on this
// rank against what its communicator's memory has (core/sysinfo.hpp's
// memory_shortfall): "" when they fit. Agreed and refused before anything
// is allocated.
std::string coll_memory_shortfall(Backend& backend, Communicator& comm, const CollConfig& cfg);

struct CollResult {
  std::vector<Record> records;  // identical on every rank
  Params summary;               // avg_busbw_<op>
};

// Collective over all ranks of `comm`.
CollResult run_coll(Runtime& rt, Communicator& comm, Backend& backend, const CollConfig& cfg);

}  // namespace xb
