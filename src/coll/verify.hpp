#pragma once
// Inputs whose collective results are exactly predictable in every dtype
// (the idea of nccl-tests' verifiable/): small integers, chosen per redop so
// sums, products and averages stay exact in int8, half and bf16 for up to
// dozens of ranks.
#include <cstddef>

#include "coll/dtype.hpp"
#include "coll/model.hpp"

namespace xb {

// Value of element i of rank r's send buffer.
double input_value(const CollCase& c, int r, std::size_t i);
// Element i of the reduction over every rank's input (c.redop).
double reduced_value(const CollCase& c, std::size_t i);
// Value element i of `rank`'s receive buffer must hold after the collective
// (the collective's row: CollSpec::expected).
double expected_value(const CollCase& c, int rank, std::size_t i, const CollCounts& counts);
// Whether `rank`'s receive buffer is defined (reduce, gather: only at the root).
bool receives(const CollCase& c, int rank);

// What an fp8 average of n equal inputs x may legitimately come to (review
// N10): NCCL's avg is a PreMulSum, each input times fp8(1/n) (rounded to
// half, then to fp8) and then added pairwise, each addition through half
// and rounded back to fp8, in the order its algorithm takes (a ring chains
// them, a tree pairs them). 1/n is not exact in fp8 unless n is a power of
// two. [lo, hi] spans every grouping of the n additions, a single rounding
// of the exact sum and the exact average x itself (MPI's user operation):
// computed by enumerating them, n at most a few dozen.
struct Fp8AvgBounds {
  double lo = 0, hi = 0;
};
Fp8AvgBounds fp8_avg_bounds(DType t, int n, double x);

// Fills rank's send buffer; counts mismatching elements of its receive buffer
// (exact but for fp8 avg, held to fp8_avg_bounds).
void fill_inputs(const CollCase& c, int rank, void* send, std::size_t count);
std::size_t count_wrong(const CollCase& c, int rank, const void* recv, const CollCounts& counts);
// The same, with the first wrong element: its index, what it should hold
// and what it holds.
struct WrongElements {
  std::size_t count = 0, first = 0;
  double expected = 0, got = 0;
};
WrongElements find_wrong(const CollCase& c, int rank, const void* recv, const CollCounts& counts);

}  // namespace xb
