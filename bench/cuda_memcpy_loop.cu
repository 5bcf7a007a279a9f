// The reference for bench/cuda_copy_vs_memcpy_async.sh: a raw
// cudaMemcpyAsync loop timed with events, nothing else.
//   cuda_memcpy_loop h2d|d2h|d2d BYTES ITERS   -> {"gbps_median":..,"gbps_max":..}
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                       \
  do {                                                              \
    cudaError_t e_ = (x);                                           \
    if (e_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                 \
    }                                                               \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s h2d|d2h|d2d BYTES ITERS\n", argv[0]);
    return 2;
  }
  const char* kind = argv[1];
  const size_t n = std::strtoull(argv[2], nullptr, 10);
  const int iters = std::atoi(argv[3]);
  void *src = nullptr, *dst = nullptr;
  const bool h2d = !std::strcmp(kind, "h2d"), d2h = !std::strcmp(kind, "d2h");
  if (h2d)
    CK(cudaMallocHost(&src, n));
  else
    CK(cudaMalloc(&src, n));
  if (d2h)
    CK(cudaMallocHost(&dst, n));
  else
    CK(cudaMalloc(&dst, n));
  CK(cudaMemset(h2d ? dst : src, 1, n));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 2; ++i) CK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s));
  std::vector<double> gbps;
  for (int i = 0; i < iters; ++i) {
    CK(cudaEventRecord(a, s));
    CK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    gbps.push_back(static_cast<double>(n) / (ms * 1e-3) / 1e9);
  }
  std::sort(gbps.begin(), gbps.end());
  std::printf("{\"gbps_median\": %.3f, \"gbps_max\": %.3f}\n", gbps[gbps.size() / 2], gbps.back());
  return 0;
}
