# Packages (cpack in the build folder): a .deb per component and one .tar.gz.
#   xferbench        the binary, the plot script; everything but CUDA
#   xferbench-cuda   the CUDA backend's module (lib/xferbench/xferbench_cuda.so),
#                    which the binary opens when it is there; it needs the
#                    CUDA runtime, cuBLAS and NCCL from NVIDIA's packages
#                    (cuda-cudart, libcublas, libnccl2), not declared here as
#                    sites install them in more than one way
# The .deb's dependencies are read off the binary (dpkg-shlibdeps) plus the
# launcher of the MPI it is built with.
set(CPACK_PACKAGE_NAME xferbench)
set(CPACK_PACKAGE_VENDOR "xferbench")
set(CPACK_PACKAGE_CONTACT "xferbench developers <xferbench@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Data movement and communication/computation overlap benchmarks for CPU, NVIDIA and Ascend systems")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_STRIP_FILES ON)  # the debug info stays in the build folder
set(CPACK_COMPONENTS_ALL core)
if(XFERBENCH_CUDA)
  list(APPEND CPACK_COMPONENTS_ALL cuda)
endif()

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_CORE_PACKAGE_NAME xferbench)
set(CPACK_DEBIAN_CORE_PACKAGE_SHLIBDEPS ON)
if(MPIEXEC_EXECUTABLE MATCHES "openmpi")
  set(CPACK_DEBIAN_CORE_PACKAGE_DEPENDS "openmpi-bin")
else()
  set(CPACK_DEBIAN_CORE_PACKAGE_DEPENDS "mpich")
endif()
set(CPACK_DEBIAN_CUDA_PACKAGE_NAME xferbench-cuda)
set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "xferbench (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_PACKAGE_SECTION science)

set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)  # one .tar.gz with everything
include(CPack)
