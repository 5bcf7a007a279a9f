#pragma once
// fleet --format prom (fleet_prom.cpp): its verdicts as Prometheus metrics,
// named as doctor's are (family/doctor/verdict_prom.hpp).
#include <string>

#include "report/report.hpp"

namespace xb {

std::string fleet_prometheus(const Report& r);

}  // namespace xb
