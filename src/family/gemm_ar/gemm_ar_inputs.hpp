#pragma once
// The deterministic inputs of gemm-ar and their float64 check. Every element
// is a function of (seed, row, column) alone, so each rank builds its own A_i
// and the shared B without communicating, and any rank can rebuild every
// rank's A_i to compute the reference sum_i A_i x B locally.
#include <cstdint>
#include <utility>
#include <vector>

#include "coll/gemm_tiling.hpp"

namespace xb {

// Seeds: rank r's A_i uses r + 1, B (the same on every rank) kGemmArBSeed.
inline constexpr std::uint64_t kGemmArBSeed = 0xB0000;
inline std::uint64_t gemm_ar_a_seed(int rank) { return static_cast<std::uint64_t>(rank) + 1; }

// Element (i, j) of the input with this seed: a multiple of 1/16 in
// [-0.5, 0.5], exact in bf16 and fp32, so products and short sums are exact
// and differences from the reference come from summation order only.
float gemm_ar_input(std::uint64_t seed, std::int64_t i, std::int64_t j);

// Rank `rank`'s A (Mp x K) and the shared B (K x Np), row-major, resized
// to the padded shape with zeros in the padding: padded tiles compute zeros.
void fill_gemm_ar_inputs(const Tiling& t, int rank, std::vector<float>& A, std::vector<float>& B);

struct GemmArCheck {
  double max_err = 0;      // max |out - ref| over the M x N elements
  std::int64_t wrong = 0;  // elements with |out - ref| > atol + rtol * |ref| (NaN included)
};

// Compares `out` (the Mp x Np row-major output; the M x N corner counts)
// with sum over `nranks` ranks of A_i x B in float64, computed as
// (sum_i A_i) x B. Local: no communication; costs one M x K x N dgemm.
GemmArCheck check_gemm_ar_output(const float* out, const Tiling& t, int nranks, double atol,
                                 double rtol);

// The outputs of several communicating phases, each run into a poisoned
// output, stage and product, merged for one check: `last` (checked against
// the reference) with NaN wherever another phase's output differs from it by
// more than atol + rtol * |last| (or is NaN), so a phase that read stale or
// poisoned data counts as wrong elements even where the last one was right.
// Returns the merged output and how many elements disagreed.
std::pair<std::vector<float>, std::int64_t> merge_phase_outputs(
    const std::vector<float>& last, const std::vector<std::vector<float>>& others, double atol,
    double rtol);

}  // namespace xb
