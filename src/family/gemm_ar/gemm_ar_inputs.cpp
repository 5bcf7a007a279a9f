#include "family/gemm_ar/gemm_ar_inputs.hpp"

#ifdef XFERBENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace xb {
namespace {

// (sum over ranks of A_i) x B in float64, M x N row-major, unpadded.
std::vector<double> reference(const GemmShape& s, int nranks) {
  std::vector<double> S(static_cast<std::size_t>(s.M * s.K), 0.0),
      B(static_cast<std::size_t>(s.K * s.N));
  for (int r = 0; r < nranks; ++r)
    for (std::int64_t i = 0; i < s.M; ++i)
      for (std::int64_t k = 0; k < s.K; ++k)
        S[static_cast<std::size_t>(i * s.K + k)] += gemm_ar_input(gemm_ar_a_seed(r), i, k);
  for (std::int64_t k = 0; k < s.K; ++k)
    for (std::int64_t j = 0; j < s.N; ++j)
      B[static_cast<std::size_t>(k * s.N + j)] = gemm_ar_input(kGemmArBSeed, k, j);
  std::vector<double> ref(static_cast<std::size_t>(s.M * s.N));
#ifdef XFERBENCH_HAVE_OPENBLAS
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.M),
              static_cast<int>(s.N), static_cast<int>(s.K), 1.0, S.data(), static_cast<int>(s.K),
              B.data(), static_cast<int>(s.N), 0.0, ref.data(), static_cast<int>(s.N));
#else  // no BLAS in this build: the plain product (gemm-ar's device paths check with it)
  for (std::int64_t i = 0; i < s.M; ++i)
    for (std::int64_t k = 0; k < s.K; ++k)
      for (std::int64_t j = 0; j < s.N; ++j)
        ref[static_cast<std::size_t>(i * s.N + j)] +=
            S[static_cast<std::size_t>(i * s.K + k)] * B[static_cast<std::size_t>(k * s.N + j)];
#endif
  return ref;
}

}  // namespace

float gemm_ar_input(std::uint64_t seed, std::int64_t i, std::int64_t j) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ULL ^
                    static_cast<std::uint64_t>(i) * 0xBF58476D1CE4E5B9ULL ^
                    static_cast<std::uint64_t>(j) * 0x94D049BB133111EBULL;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 32;
  return static_cast<float>(static_cast<int>(x % 17) - 8) / 16.0f;
}

void fill_gemm_ar_inputs(const Tiling& t, int rank, std::vector<float>& A, std::vector<float>& B) {
  const auto& s = t.shape;
  A.assign(static_cast<std::size_t>(t.Mp * s.K), 0.0f);
  B.assign(static_cast<std::size_t>(s.K * t.Np), 0.0f);
  for (std::int64_t i = 0; i < s.M; ++i)
    for (std::int64_t k = 0; k < s.K; ++k)
      A[static_cast<std::size_t>(i * s.K + k)] = gemm_ar_input(gemm_ar_a_seed(rank), i, k);
  for (std::int64_t k = 0; k < s.K; ++k)
    for (std::int64_t j = 0; j < s.N; ++j)
      B[static_cast<std::size_t>(k * t.Np + j)] = gemm_ar_input(kGemmArBSeed, k, j);
}

GemmArCheck check_gemm_ar_output(const float* out, const Tiling& t, int nranks, double atol,
                                 double rtol) {
  const auto& s = t.shape;
  const std::vector<double> ref = reference(s, nranks);
  GemmArCheck c;
  for (std::int64_t i = 0; i < s.M; ++i)
    for (std::int64_t j = 0; j < s.N; ++j) {
      const double want = ref[static_cast<std::size_t>(i * s.N + j)];
      const double err = std::fabs(static_cast<double>(out[i * t.Np + j]) - want);
      c.max_err = std::max(c.max_err, err);
      if (!(err <= atol + rtol * std::fabs(want))) ++c.wrong;
    }
  return c;
}

std::pair<std::vector<float>, std::int64_t> merge_phase_outputs(
    const std::vector<float>& last, const std::vector<std::vector<float>>& others, double atol,
    double rtol) {
  std::vector<float> merged = last;
  std::int64_t disagree = 0;
  for (std::size_t i = 0; i < merged.size(); ++i) {
    const double want = last[i];
    for (const auto& o : others) {
      const double got = i < o.size() ? o[i] : std::nan("");
      if (!(std::fabs(got - want) <= atol + rtol * std::fabs(want))) {
        merged[i] = std::nanf("");
        ++disagree;
        break;
      }
    }
  }
  return {std::move(merged), disagree};
}

}  // namespace xb
