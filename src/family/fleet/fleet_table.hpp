#pragma once
// `xferbench fleet`'s table: the verdicts, then the matrix of send GB/s
// (one per rail with --rails), then the slow hosts and links.
#include <string>

#include "report/report.hpp"

namespace xb {

std::string fleet_tables(const Report& r);

}  // namespace xb
