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

// Fills rank's send buffer; counts mismatching elements of its receive buffer.
void fill_inputs(const CollCase& c, int rank, void* send, std::size_t count);
std::size_t count_wrong(const CollCase& c, int rank, const void* recv, const CollCounts& counts);

}  // namespace xb
