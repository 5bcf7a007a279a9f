// The benchmark families: one line each. A new family is a folder under
// family/ and one line here (docs/DESIGN.md shows how).
#include "cli/cli.hpp"
#include "family/coll/coll_family.hpp"
#include "family/copy/copy_family.hpp"
#include "family/doctor/doctor_family.hpp"
#include "family/engine/engine_family.hpp"
#include "family/ep/ep_family.hpp"
#include "family/fleet/fleet_family.hpp"
#include "family/gemm_ar/gemm_ar_family.hpp"
#include "family/kv/kv_family.hpp"
#include "family/latency/latency_family.hpp"
#include "family/remote/remote_family.hpp"

namespace xb::cli {

Families all_families() {
  Families f;
  f.push_back(make_copy_family());
  f.push_back(make_remote_family());
  f.push_back(make_latency_family());
  f.push_back(make_coll_family());
  f.push_back(make_engine_family());
  f.push_back(make_kv_family());
  f.push_back(make_ep_family());
  f.push_back(make_fleet_family());
  f.push_back(make_gemm_ar_family());
  f.push_back(make_doctor_family());
  return f;
}

}  // namespace xb::cli
