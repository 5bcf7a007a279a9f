#pragma once
// Per collective: what a "size" means in bytes and elements, and the bus
// bandwidth factor, as nccl-tests documents them (PERFORMANCE.md):
//   allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n;
//   broadcast, reduce, sendrecv 1.
#include <cstddef>
#include <string>
#include <vector>

#include "coll/dtype.hpp"
#include "core/units.hpp"

namespace xb {

enum class CollOp {
  allreduce,
  allgather,
  reducescatter,
  broadcast,
  reduce,
  alltoall,
  sendrecv,
  gather,
  scatter,
  alltoallv
};

const char* to_string(CollOp op);
// One name or "all". Throws UsageError for an unknown collective.
std::vector<CollOp> parse_collectives(const std::string& name);
bool is_reduction(CollOp op);  // takes a redop
bool has_root(CollOp op);      // broadcast, reduce

double bus_factor(CollOp op, int nranks);

// `bytes` is nccl-tests' size: the whole buffer, i.e. the gathered result
// (allgather), the full input (reducescatter, alltoall), else the message.
struct CollCounts {
  std::size_t send = 0;   // elements in each rank's send buffer
  std::size_t recv = 0;   // elements in each rank's receive buffer
  std::size_t count = 0;  // the "count" column: per-rank element count passed to the library
};

// Throws UsageError when bytes is not a whole number of elements, or the
// elements do not split evenly over the ranks where the collective needs it.
CollCounts coll_counts(CollOp op, Bytes bytes, DType t, int nranks);

}  // namespace xb
