#!/bin/sh
# mpi-launcher.sh XFERBENCH: the launcher of the MPI that binary is built with
# (the `launcher:` line of `XFERBENCH --version`), for the bench and test
# scripts: not the `mpiexec` on PATH, which Debian points at whichever MPI has
# the higher priority. Prints `mpiexec` when the binary does not say.
l=$("${1:?usage: mpi-launcher.sh XFERBENCH}" --version 2>/dev/null | sed -n 's/^launcher: \([^ ]*\).*/\1/p')
echo "${l:-mpiexec}"
