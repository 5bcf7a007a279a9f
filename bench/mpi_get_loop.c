/* Peer baseline for `xferbench remote --transport rma --method dma`: the
 * minimal raw loop, rank 0 reads rank 1's MPI window with MPI_Get + flush,
 * timed per transfer with MPI_Wtime. Prints one JSON line per size with the
 * median GB/s (decimal, bytes once). Usage: mpi_get_loop ITERS SIZE... */
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
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 3) {
    if (rank == 0) fprintf(stderr, "usage: mpi_get_loop ITERS SIZE...\n");
    MPI_Finalize();
    return 2;
  }
  const int iters = atoi(argv[1]);
  long max = 0;
  for (int i = 2; i < argc; ++i)
    if (atol(argv[i]) > max) max = atol(argv[i]);
  const long win_bytes = (max + 4095) / 4096 * 4096;
  char* base;
  MPI_Win win;
  MPI_Win_allocate(win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  memset(base, rank + 1, win_bytes);
  char* dst = malloc(max);
  memset(dst, 0, max);
  double* t = malloc(sizeof(double) * iters);
  MPI_Win_lock_all(0, win);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int a = 2; a < argc; ++a) {
    const int n = atoi(argv[a]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      for (int i = 0; i < iters / 10 + 1; ++i) { /* warm-up */
        MPI_Get(dst, n, MPI_BYTE, 1, 0, n, MPI_BYTE, win);
        MPI_Win_flush(1, win);
      }
      for (int i = 0; i < iters; ++i) {
        const double t0 = MPI_Wtime();
        MPI_Get(dst, n, MPI_BYTE, 1, 0, n, MPI_BYTE, win);
        MPI_Win_flush(1, win);
        t[i] = MPI_Wtime() - t0;
      }
      qsort(t, iters, sizeof(double), cmp);
      printf("{\"bytes\": %d, \"iters\": %d, \"gbps_median\": %.4f, \"ok\": %s}\n", n, iters,
             n / t[iters / 2] / 1e9, dst[0] == 2 && dst[n - 1] == 2 ? "true" : "false");
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  free(dst);
  free(t);
  MPI_Finalize();
  return 0;
}
