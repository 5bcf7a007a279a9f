#pragma once
// The boundary between the xferbench binary and its CUDA backend, built as a
// module of its own (xferbench_cuda.so) that the binary opens at run time:
// the binary has no load-time dependency on CUDA, cuBLAS or NCCL, and where
// their libraries are missing `list` says so and everything else runs.
//
// The module exports one C symbol, kCudaModuleSymbol, returning a
// CudaModule. C++ objects cross the boundary (Backend, BackendStatus), so a
// module is taken only from the same build as the binary: `abi` must equal
// the binary's kBuildAbi (xferbench/version.hpp: version, git describe,
// compiler), else the module is refused with one line.
#include <memory>
#include <string>

#include "backend/backend.hpp"

namespace xb {

struct CudaModule {
  const char* abi;  // kBuildAbi of the build that made the module
  BackendStatus (*probe)();
  std::unique_ptr<Backend> (*make)();
};

inline constexpr const char* kCudaModuleSymbol = "xferbench_cuda_module_v1";
inline constexpr const char* kCudaModuleFile = "xferbench_cuda.so";

// The CUDA module's state in this process, loaded at the first call: the
// module, or why there is none ("no xferbench_cuda.so beside the binary",
// "libcudart.so.13: cannot open shared object file", a module of another
// build). Looked for in XFERBENCH_CUDA_MODULE, beside the binary, then in
// the installed layout's <libdir>/xferbench/ (kModuleDirFromBin).
struct CudaModuleLoad {
  const CudaModule* module = nullptr;
  std::string path;  // the file opened, or tried
  std::string why;   // when module is null
};
const CudaModuleLoad& cuda_module();

}  // namespace xb
