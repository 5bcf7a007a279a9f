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
#include "runtime/runtime.hpp"

namespace xb {

enum class TimeAgg { max, avg, min };  // over ranks, per iteration (nccl-tests -a)
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
  // Test seam: sees this rank's received elements (host copy) before they
  // are checked; tests corrupt one to prove #wrong counts it.
  std::function<void(const CollCase&, void* recv_host, std::size_t count)> before_check;
};

// Same on every rank (depends only on options and the rank count): throws
// UsageError for a root out of range or a size the collective cannot split.
void validate_coll(int nranks, const CollConfig& cfg);

struct CollResult {
  std::vector<Record> records;  // identical on every rank
  Params summary;               // avg_busbw_<op>
};

// Collective over all ranks of `comm`.
CollResult run_coll(Runtime& rt, Communicator& comm, Backend& backend, const CollConfig& cfg);

}  // namespace xb
