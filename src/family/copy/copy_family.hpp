#pragma once
// `xferbench copy`: h2d, d2h, d2d, p2p by the dma engine or by cores.
#include <memory>

#include "family/family.hpp"

namespace xb {

std::unique_ptr<Family> make_copy_family();
// The copy tables: one ascend-dmi style table per case, pair and method,
// and N x N matrices for p2p.
std::string copy_tables(const Report& r);

}  // namespace xb
