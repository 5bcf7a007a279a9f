#pragma once
// Element types and reduction operators of the collectives, with exact
// conversions for the 16-bit floating types (IEEE binary16, bfloat16) and
// the 8-bit ones (OCP FP8 E4M3 and E5M2, as NCCL's and CUDA's).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "coll/fp16.hpp"
#include "coll/fp8.hpp"

namespace xb {

enum class DType { int8, uint8, int32, int64, half, bf16, float32, float64, fp8e4m3, fp8e5m2 };
enum class RedOp { sum, prod, min, max, avg };

std::size_t dtype_size(DType t);
// nccl-tests names: "int8", ..., "half", "bf16", "float", "double", "fp8e4m3", "fp8e5m2"
const char* to_string(DType t);
const char* to_string(RedOp op);
// "float" or "all"; comma lists allowed. Throws UsageError naming `what`.
std::vector<DType> parse_dtypes(const std::string& list);
std::vector<RedOp> parse_redops(const std::string& list);
// Every name parse_dtypes / parse_redops takes but "all", comma-separated,
// from the same table: for --help and the error messages.
std::string dtype_names();
std::string redop_names();

// Element i of a buffer of type t, as a double (exact for every type here
// but int64 beyond 2^53).
double load(DType t, const void* base, std::size_t i);
void store(DType t, void* base, std::size_t i, double v);

}  // namespace xb
