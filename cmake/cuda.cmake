# The CUDA backend: nvcc for the kernels, cudart, cuBLAS and NCCL. AUTO builds
# it when nvcc and NCCL are found and says loudly what it left out; ON fails
# the configure when they are not.
#
# Architectures (CMAKE_CUDA_ARCHITECTURES overrides): SASS for sm_80 (A100,
# A10, A30), sm_90 (H100, H200), sm_100 (B200, GB200) and sm_120 (RTX PRO
# 6000 Blackwell), plus compute_120 PTX that later GPUs compile at load time,
# as nccl-tests does. Where nvcc predates sm_100/sm_120 (CUDA < 12.8), the
# newest it knows gets the PTX.
# nvcc: CUDACXX or CMAKE_CUDA_COMPILER, then the nvcc on PATH (a site's
# module), then /usr/local/cuda/bin/nvcc.
# NCCL: NCCL_HOME or NCCL_ROOT (environment or cache), the toolkit's folders,
# then the system's (libnccl.so or libnccl.so.2, nccl.h).
set(XFERBENCH_CUDA OFF)
if(NOT XFERBENCH_WITH_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "XFERBENCH_WITH_CUDA must be AUTO, ON or OFF, not '${XFERBENCH_WITH_CUDA}'")
endif()
if(XFERBENCH_WITH_CUDA STREQUAL "OFF")
  message(STATUS "CUDA backend: off (XFERBENCH_WITH_CUDA=OFF)")
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  find_program(XFERBENCH_NVCC nvcc)
  if(NOT XFERBENCH_NVCC AND EXISTS /usr/local/cuda/bin/nvcc)
    set(XFERBENCH_NVCC /usr/local/cuda/bin/nvcc CACHE FILEPATH "nvcc" FORCE)
  endif()
  if(XFERBENCH_NVCC)
    set(CMAKE_CUDA_COMPILER ${XFERBENCH_NVCC})
  endif()
endif()
include(CheckLanguage)
check_language(CUDA)
set(_why "")
if(CMAKE_CUDA_COMPILER)
  # The default architectures, decided before enable_language (which checks
  # them): nvcc's own version says whether it knows sm_100 and sm_120.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
    execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --version OUTPUT_VARIABLE _nvcc_v ERROR_QUIET)
    string(REGEX MATCH "release ([0-9]+\\.[0-9]+)" _m "${_nvcc_v}")
    # sm_90 from CUDA 11.8, sm_100 and sm_120 from 12.8; older nvcc: sm_80 and its PTX.
    set(_archs 80-real 80-virtual)
    if(CMAKE_MATCH_1 AND CMAKE_MATCH_1 VERSION_GREATER_EQUAL 12.8)
      set(_archs 80-real 90-real 100-real 120-real 120-virtual)
    elseif(CMAKE_MATCH_1 AND CMAKE_MATCH_1 VERSION_GREATER_EQUAL 11.8)
      set(_archs 80-real 90-real 90-virtual)
    endif()
    set(CMAKE_CUDA_ARCHITECTURES "${_archs}" CACHE STRING
      "CUDA architectures (default: SASS for 80, 90, 100, 120 and PTX for the newest)")
  endif()
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(_nccl_hints)
  foreach(v NCCL_HOME NCCL_ROOT)
    if(DEFINED ${v})
      list(APPEND _nccl_hints ${${v}})
    endif()
    if(DEFINED ENV{${v}})
      list(APPEND _nccl_hints $ENV{${v}})
    endif()
  endforeach()
  find_library(XFERBENCH_NCCL_LIBRARY NAMES nccl libnccl.so.2
    HINTS ${_nccl_hints} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib
          ${CUDAToolkit_LIBRARY_ROOT}/lib64
    PATH_SUFFIXES lib lib64)
  find_path(XFERBENCH_NCCL_INCLUDE nccl.h HINTS ${_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS}
    PATH_SUFFIXES include)
  if(NOT XFERBENCH_NCCL_LIBRARY OR NOT XFERBENCH_NCCL_INCLUDE)
    set(_why "NCCL (nccl.h, libnccl.so) not found: set NCCL_HOME to where it is installed")
  endif()
else()
  set(_why "no CUDA compiler (nvcc) found; set CUDACXX or CMAKE_CUDA_COMPILER")
endif()

if(_why)
  if(XFERBENCH_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "XFERBENCH_WITH_CUDA=ON but ${_why}")
  endif()
  message(WARNING "CUDA backend left out: ${_why}. This build has no cuda backend "
                  "(XFERBENCH_WITH_CUDA=ON makes this an error; OFF silences it).")
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
