// NCCL's features by its running version (backend/common/nccl_rules.hpp).
#include "backend/common/nccl_rules.hpp"

#include <fmt/format.h>

namespace xb {

std::string nccl_version_name(int code) {
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100);
}

Support nccl_supports(int version, int min_major, CollOp op, DType t) {
  if (t != DType::fp8e4m3 && t != DType::fp8e5m2) return Support::yes();
  if (version < kNcclFp8)
    return Support::no(fmt::format("the NCCL that runs ({}) has no fp8 types (2.24 and newer)",
                                   nccl_version_name(version)));
  if (min_major >= 9) return Support::yes();
  // Below sm90: which calls reach NCCL's fp8 check.
  const bool grouped_p2p =
      op == CollOp::alltoall || op == CollOp::alltoallv || op == CollOp::sendrecv ||
      ((op == CollOp::gather || op == CollOp::scatter) && !nccl_has_gather_scatter(version));
  if (grouped_p2p) return Support::yes();
  if (is_reduction(op)) return Support::no("NCCL reduces fp8 on sm90 and newer GPUs only");
  if (version < kNcclGatherScatter)
    return Support::no(fmt::format(
        "the NCCL that runs ({}) takes fp8 in {} on sm90 and newer GPUs only (2.28.3 moves fp8 "
        "data on any GPU)",
        nccl_version_name(version), to_string(op)));
  return Support::yes();
}

Support nccl_supports_on(int nranks, CollOp op, DType t, RedOp ro) {
  if (nranks == 1 && ro == RedOp::avg && is_reduction(op) &&
      (t == DType::fp8e4m3 || t == DType::fp8e5m2))
    return Support::no(
        "NCCL has no fp8 avg kernel for one rank (its one-rank path returns invalid argument)");
  return Support::yes();
}

}  // namespace xb
