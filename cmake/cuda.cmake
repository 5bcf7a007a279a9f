# The CUDA backend: nvcc for the kernels (sm_90 SASS plus compute_90 PTX, so
# later GPUs JIT the PTX), cudart and NCCL from the toolkit. AUTO builds it
# when nvcc and NCCL are found; ON fails the configure when they are not.
set(XFERBENCH_CUDA OFF)
if(NOT XFERBENCH_WITH_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "XFERBENCH_WITH_CUDA must be AUTO, ON or OFF, not '${XFERBENCH_WITH_CUDA}'")
endif()
if(XFERBENCH_WITH_CUDA STREQUAL "OFF")
  message(STATUS "CUDA backend: off (XFERBENCH_WITH_CUDA=OFF)")
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
include(CheckLanguage)
check_language(CUDA)
set(_why "")
if(CMAKE_CUDA_COMPILER)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)  # 90 = sm_90 SASS + compute_90 PTX
  endif()
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  find_library(XFERBENCH_NCCL_LIBRARY nccl
    HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib ${CUDAToolkit_LIBRARY_ROOT}/lib64)
  find_path(XFERBENCH_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(NOT XFERBENCH_NCCL_LIBRARY OR NOT XFERBENCH_NCCL_INCLUDE)
    set(_why "NCCL (nccl.h, libnccl.so) not found next to the CUDA toolkit")
  endif()
else()
  set(_why "no CUDA compiler (nvcc) found; set CUDACXX or CMAKE_CUDA_COMPILER")
endif()

if(_why)
  if(XFERBENCH_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "XFERBENCH_WITH_CUDA=ON but ${_why}")
  endif()
  message(STATUS "CUDA backend: off (${_why})")
  return()
endif()

if(CCACHE_PROGRAM)
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${CCACHE_LAUNCHER})
endif()
add_library(xferbench_nccl SHARED IMPORTED)
set_target_properties(xferbench_nccl PROPERTIES IMPORTED_LOCATION ${XFERBENCH_NCCL_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${XFERBENCH_NCCL_INCLUDE})
set(XFERBENCH_CUDA ON)
message(STATUS "CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}, "
  "NCCL ${XFERBENCH_NCCL_LIBRARY})")
