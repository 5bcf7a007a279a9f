#include "coll/communicator.hpp"

#include <fmt/format.h>

#include "backend/ascend/ascend_backend.hpp"
#include "core/error.hpp"
#ifdef XFERBENCH_HAVE_CUDA
#include "backend/cuda/cuda_backend.hpp"
#endif

namespace xb {

std::unique_ptr<Communicator> make_communicator(Runtime& rt, Backend& backend) {
  const std::string name = backend.name();
  if (name == "host") return make_mpi_communicator(rt);
#ifdef XFERBENCH_HAVE_CUDA
  if (name == "cuda") return make_nccl_communicator(rt, backend);
#endif
  if (name == "ascend") return make_hccl_communicator(rt, backend);
  throw UsageError(fmt::format("the {} backend has no collective library in this build", name));
}

}  // namespace xb
