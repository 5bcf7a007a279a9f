#pragma once
// What an NCCL library offers, by the version that runs (ncclGetVersion),
// not by the headers xferbench was built with (the CUDA review's N2): a
// binary built against 2.28 headers meets 2.24-2.27 libraries in PyTorch
// wheels and on clusters. GPU-free, so the rules are tested without NCCL.
#include <string>

#include "coll/dtype.hpp"
#include "coll/model.hpp"
#include "core/registry.hpp"

namespace xb {

// NCCL's version number as ncclGetVersion gives it: major*10000 +
// minor*100 + patch from 2.9 on (22803 is 2.28.3), major*1000 +
// minor*100 + patch before.
std::string nccl_version_name(int code);

// The first versions with a feature (from NVIDIA/nccl's own sources):
inline constexpr int kNcclFp8 = 22403;            // ncclFloat8e4m3, ncclFloat8e5m2
inline constexpr int kNcclGatherScatter = 22803;  // ncclGather, ncclScatter, ncclAlltoAll

// Whether NCCL `version` runs collective `op` on data of type `t` where the
// oldest GPU of the communicator has compute capability `min_major`.x:
//   fp8 types exist from 2.24;
//   2.24 - 2.28.2 refuse any fp8 collective of NCCL's own (not the grouped
//     sends and receives of alltoall, alltoallv, sendrecv, and gather and
//     scatter before 2.28.3) below sm90 (ncclInvalidArgument);
//   2.28.3 on refuse only fp8 reductions below sm90.
Support nccl_supports(int version, int min_major, CollOp op, DType t);

// Whether NCCL runs reduction `op` with `ro` on `t` in a communicator of
// `nranks`: with one rank, NCCL copies instead of reducing, but for avg on
// floating types it launches a premultiply kernel, chosen in host code under
// a test of __CUDA_ARCH__, which host code never defines: its fp8 cases are
// never compiled, and fp8 avg on one rank is ncclInvalidArgument (seen
// with 2.28 on an H200; the same code is in 2.24 to 2.30).
Support nccl_supports_on(int nranks, CollOp op, DType t, RedOp ro);

// Whether gather and scatter are NCCL's own calls in `version`, or grouped
// sends and receives.
inline bool nccl_has_gather_scatter(int version) { return version >= kNcclGatherScatter; }

}  // namespace xb
