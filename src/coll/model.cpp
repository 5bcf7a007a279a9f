#include "coll/model.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace xb {
namespace {
constexpr CollOp kAll[] = {CollOp::allreduce, CollOp::allgather, CollOp::reducescatter,
                           CollOp::broadcast, CollOp::reduce,    CollOp::alltoall,
                           CollOp::sendrecv};
}

const char* to_string(CollOp op) {
  constexpr const char* names[] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                   "reduce",    "alltoall",  "sendrecv"};
  return names[static_cast<int>(op)];
}

std::vector<CollOp> parse_collectives(const std::string& name) {
  if (name == "all") return {std::begin(kAll), std::end(kAll)};
  for (CollOp op : kAll)
    if (name == to_string(op)) return {op};
  throw UsageError(fmt::format(
      "unknown collective '{}' (allreduce, allgather, reducescatter, broadcast, reduce, alltoall, "
      "sendrecv, or all)",
      name));
}

bool is_reduction(CollOp op) {
  return op == CollOp::allreduce || op == CollOp::reducescatter || op == CollOp::reduce;
}

bool has_root(CollOp op) { return op == CollOp::broadcast || op == CollOp::reduce; }

double bus_factor(CollOp op, int n) {
  const double dn = n;
  switch (op) {
    case CollOp::allreduce:
      return 2.0 * (dn - 1) / dn;
    case CollOp::allgather:
    case CollOp::reducescatter:
    case CollOp::alltoall:
      return (dn - 1) / dn;
    default:
      return 1.0;
  }
}

CollCounts coll_counts(CollOp op, Bytes bytes, DType t, int nranks) {
  const std::size_t es = dtype_size(t);
  if (bytes % es != 0)
    throw UsageError(fmt::format("{}: {} B is not a whole number of {} elements ({} B each)",
                                 to_string(op), bytes, to_string(t), es));
  const std::size_t elems = bytes / es;
  const auto n = static_cast<std::size_t>(nranks);
  const bool split =
      op == CollOp::allgather || op == CollOp::reducescatter || op == CollOp::alltoall;
  if (split && elems % n != 0)
    throw UsageError(
        fmt::format("{}: {} B = {} {} elements do not split over {} ranks (use sizes that are "
                    "multiples of {} B)",
                    to_string(op), bytes, elems, to_string(t), nranks, es * n));
  switch (op) {
    case CollOp::allgather:
      return {elems / n, elems, elems / n};
    case CollOp::reducescatter:
      return {elems, elems / n, elems / n};
    case CollOp::alltoall:
      return {elems, elems, elems / n};
    default:
      return {elems, elems, elems};
  }
}

}  // namespace xb
