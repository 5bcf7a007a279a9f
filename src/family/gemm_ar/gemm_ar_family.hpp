#pragma once
// `xferbench gemm-ar`: fused GEMM + AllReduce with tile-level overlap.
#include <memory>

#include "family/family.hpp"

namespace xb {

std::unique_ptr<Family> make_gemm_ar_family();
// The time of each phase, then the analysis figures of pto-isa's GEMM+AllReduce example.
std::string gemm_tables(const Report& r);

}  // namespace xb
