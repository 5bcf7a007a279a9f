# Which MPI xferbench is built against, and the launcher it starts itself with
# (`--ranks N`, `doctor --ranks`, the tests).
#
# XFERBENCH_MPI:
#   ""        FindMPI's choice: MPI_HOME, or the mpicc on PATH (a site's module,
#             HPC-X's hpcx_load, RHEL's `module load mpi/openmpi-x86_64`)
#   mpich     Debian's side-by-side names: mpicc.mpich and mpiexec.mpich
#   openmpi   Debian's side-by-side names: mpicc.openmpi and mpirun.openmpi
# Where the named wrapper is missing (another distribution), FindMPI's choice
# stands and configure says so. MPICH and Open MPI install side by side on
# Debian, and the `mpi`/`mpirun` alternatives then point at whichever has the
# higher priority (Open MPI): never rely on them.
set(XFERBENCH_MPI "" CACHE STRING "MPI to build against: empty (the mpicc on PATH), mpich or openmpi")
set_property(CACHE XFERBENCH_MPI PROPERTY STRINGS "" mpich openmpi)

if(XFERBENCH_MPI STREQUAL "mpich")
  set(_xb_mpicc mpicc.mpich)
  set(_xb_mpiexec mpiexec.mpich)
elseif(XFERBENCH_MPI STREQUAL "openmpi")
  set(_xb_mpicc mpicc.openmpi)
  set(_xb_mpiexec mpirun.openmpi)
elseif(NOT XFERBENCH_MPI STREQUAL "")
  message(FATAL_ERROR "XFERBENCH_MPI='${XFERBENCH_MPI}': want empty, mpich or openmpi")
endif()
if(_xb_mpicc AND MPI_C_COMPILER AND NOT MPI_C_COMPILER MATCHES "${_xb_mpicc}$")
  message(FATAL_ERROR "XFERBENCH_MPI=${XFERBENCH_MPI}, but this build folder is configured with "
                      "${MPI_C_COMPILER}: use a fresh build folder for another MPI")
endif()
if(_xb_mpicc AND NOT MPI_C_COMPILER)
  find_program(XFERBENCH_MPICC ${_xb_mpicc})
  find_program(XFERBENCH_MPIEXEC_NAMED ${_xb_mpiexec})
  if(XFERBENCH_MPICC AND XFERBENCH_MPIEXEC_NAMED)
    set(MPI_C_COMPILER ${XFERBENCH_MPICC} CACHE FILEPATH "MPI C compiler wrapper")
    set(MPIEXEC_EXECUTABLE ${XFERBENCH_MPIEXEC_NAMED} CACHE FILEPATH "MPI launcher")
  else()
    message(STATUS "XFERBENCH_MPI=${XFERBENCH_MPI}: no ${_xb_mpicc}/${_xb_mpiexec} here, "
                   "taking the MPI FindMPI finds (the mpicc on PATH, or MPI_HOME)")
  endif()
endif()
find_package(MPI REQUIRED COMPONENTS C)
if(NOT MPIEXEC_EXECUTABLE)
  message(FATAL_ERROR "MPI found (${MPI_C_LIBRARIES}) but no launcher beside it (mpiexec/mpirun): "
                      "set MPIEXEC_EXECUTABLE")
endif()

# Open MPI's mpirun as root needs --allow-run-as-root; the tests set
# OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM) and oversubscribe through the environment
# (tests/CMakeLists.txt), so MPIEXEC_PREFLAGS stays what the site gave.
message(STATUS "MPI: ${MPI_C_LIBRARIES}, launcher ${MPIEXEC_EXECUTABLE} "
               "${MPIEXEC_NUMPROC_FLAG} N ${MPIEXEC_PREFLAGS}")

# The launcher as a C++ header for runtime/runtime.cpp only (a define on every
# compile line would change each object's ccache key with the MPI).
string(REPLACE ";" "\", \"" XFERBENCH_MPIEXEC_PREFLAGS_LIST "${MPIEXEC_PREFLAGS}")
if(XFERBENCH_MPIEXEC_PREFLAGS_LIST)
  set(XFERBENCH_MPIEXEC_PREFLAGS_LIST "\"${XFERBENCH_MPIEXEC_PREFLAGS_LIST}\", ")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/launcher.hpp.in
               ${CMAKE_BINARY_DIR}/generated/xferbench/launcher.hpp @ONLY)
