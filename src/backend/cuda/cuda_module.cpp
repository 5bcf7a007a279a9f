// The CUDA backend's entry point as a module (backend/cuda_module.hpp).
#include "backend/cuda_module.hpp"

#include <xferbench/version.hpp>

#include "backend/cuda/cuda_backend.hpp"

extern "C" __attribute__((visibility("default"))) const xb::CudaModule* xferbench_cuda_module_v1() {
  static const xb::CudaModule m{xb::kBuildAbi, &xb::probe_cuda, &xb::make_cuda_backend};
  return &m;
}
