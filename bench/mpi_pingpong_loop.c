/* Peer baseline for `xferbench latency -t pingpong`: the plain osu_latency
 * loop, rank 0 MPI_Send then MPI_Recv, rank 1 MPI_Recv then MPI_Send, each
 * round trip timed with MPI_Wtime. Prints one JSON line per size with the
 * one-way median (round trip / 2, as osu_latency) and the loop's mean.
 * Usage: mpi_pingpong_loop ITERS WARMUP SIZE... */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 4 || size < 2) {
    if (rank == 0) fprintf(stderr, "usage: mpiexec -n 2 mpi_pingpong_loop ITERS WARMUP SIZE...\n");
    MPI_Finalize();
    return 2;
  }
  const int iters = atoi(argv[1]), warmup = atoi(argv[2]);
  long max = 1;
  for (int i = 3; i < argc; ++i)
    if (atol(argv[i]) > max) max = atol(argv[i]);
  char* send = malloc(max);
  char* recv = malloc(max);
  memset(send, rank + 1, max);
  double* t = malloc(sizeof(double) * iters);
  for (int a = 3; a < argc; ++a) {
    const int n = atoi(argv[a]);
    memset(recv, 0, max);
    MPI_Barrier(MPI_COMM_WORLD);
    double total = 0;
    for (int i = 0; i < warmup + iters; ++i) {
      if (rank == 0) {
        const double t0 = MPI_Wtime();
        MPI_Send(send, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(recv, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        const double dt = MPI_Wtime() - t0;
        if (i >= warmup) {
          t[i - warmup] = dt;
          total += dt;
        }
      } else if (rank == 1) {
        MPI_Recv(recv, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(send, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
      }
    }
    if (rank == 0) {
      qsort(t, iters, sizeof(double), cmp);
      printf("{\"bytes\": %d, \"iters\": %d, \"oneway_us_median\": %.4f, \"oneway_us_mean\": %.4f, "
             "\"ok\": %s}\n",
             n, iters, t[iters / 2] / 2 * 1e6, total / iters / 2 * 1e6,
             recv[0] == 2 && recv[n - 1] == 2 ? "true" : "false");
      fflush(stdout);
    }
  }
  free(send);
  free(recv);
  free(t);
  MPI_Finalize();
  return 0;
}
