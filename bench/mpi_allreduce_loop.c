/* Peer baseline for `xferbench coll allreduce`: the raw nccl-tests-style
 * loop. Per size: barrier, ITERS x MPI_Allreduce(float, sum) out of place,
 * time per call = loop time / ITERS, max over ranks. Prints one JSON line per
 * size with algbw and busbw = algbw * 2(n-1)/n (decimal GB/s).
 * Usage: mpi_allreduce_loop ITERS WARMUP SIZE... */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc < 4) {
    if (rank == 0) fprintf(stderr, "usage: mpi_allreduce_loop ITERS WARMUP SIZE...\n");
    MPI_Finalize();
    return 2;
  }
  const int iters = atoi(argv[1]), warmup = atoi(argv[2]);
  long max = 0;
  for (int i = 3; i < argc; ++i)
    if (atol(argv[i]) > max) max = atol(argv[i]);
  float* send = malloc(max);
  float* recv = malloc(max);
  for (long i = 0; i < max / 4; ++i) send[i] = (float)((i + rank) % 4);
  for (int a = 3; a < argc; ++a) {
    const int count = atoi(argv[a]) / 4;
    for (int i = 0; i < warmup; ++i) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = (MPI_Wtime() - t0) / iters, tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      const double algbw = count * 4.0 / tmax / 1e9;
      printf("{\"bytes\": %d, \"time_us\": %.3f, \"algbw\": %.4f, \"busbw\": %.4f}\n", count * 4, tmax * 1e6, algbw,
             algbw * 2.0 * (n - 1) / n);
    }
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
