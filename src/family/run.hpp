#pragma once
// Only until src/family/doctor and src/cli include what they use: run.hpp
// was split by purpose into options.hpp, parse.hpp, output.hpp,
// backend_choice.hpp, ranked.hpp and cycles.hpp; RunOpts is OfferedOptions.
// Nothing new includes this file.
#include "backend/select/select.hpp"  // make_backend, as run.hpp had it
#include "family/backend_choice.hpp"
#include "family/cycles.hpp"
#include "family/options.hpp"
#include "family/output.hpp"
#include "family/parse.hpp"
#include "family/ranked.hpp"

namespace xb {
using RunOpts = OfferedOptions;
}  // namespace xb
