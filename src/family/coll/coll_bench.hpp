#pragma once
// `xferbench coll`: collective bandwidth with nccl-tests' conventions. One
// harness owns sizes, placement, warm-up, timing, aggregation over ranks and
// checking; each collective is a byte model, a bus factor and one call.
#include <functional>
#include <vector>

#include "backend/backend.hpp"
#include "coll/communicator.hpp"
#include "coll/verify.hpp"
#include "core/record.hpp"
#include "core/registry.hpp"
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
}  // namespace coll_field

// How each rank's statistics are combined over the ranks (nccl-tests -a):
// every statistic (min, median, ...) of each rank's own iterations, then the
// max, mean or min of that statistic over the ranks.
enum class TimeAgg { max, avg, min };
const char* to_string(TimeAgg a);

struct CollConfig {
  std::vector<CollOp> ops{CollOp::allreduce};
  std::vector<DType> dtypes{DType::float32};
  std::vector<RedOp> redops{RedOp::sum};
  std::vector<Bytes> sizes;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  int root = 0;
  bool outofplace = true;
  bool inplace = true;
  TimeAgg agg = TimeAgg::max;
  bool graph = false;  // --graph: timed iterations captured in a CUDA graph and replayed
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
// replayed (nccl-tests -G); UsageError where the library cannot.
std::vector<double> time_on_stream(Communicator& comm, StreamMarks& marks,
                                   const std::function<void()>& call, int iters,
                                   bool graph = false);
// Which clock times `comm`'s collectives, in words (the table says it).
std::string timed_by(const Communicator& comm);

// Declares coll.<collective> for `list`.
void register_coll(Registry& registry);

// Same on every rank (depends only on options and the rank count): throws
// UsageError for a root out of range or a size the collective cannot split.
// With `comm`, also that it can do what cfg asks (--graph needs a stream).
void validate_coll(int nranks, const CollConfig& cfg, Communicator* comm = nullptr);

struct CollResult {
  std::vector<Record> records;  // identical on every rank
  Params summary;               // avg_busbw_<op>
};

// Collective over all ranks of `comm`.
CollResult run_coll(Runtime& rt, Communicator& comm, Backend& backend, const CollConfig& cfg);

}  // namespace xb
