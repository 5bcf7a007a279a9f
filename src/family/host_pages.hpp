#pragma once
// --host-mem huge, shared by copy, remote, engine and kv: host buffers from
// huge pages (hugetlb where the system has reserved enough, transparent huge
// pages with madvise otherwise). What a run got goes into its summary as
// `host_pages`; where neither is available its records are waived with the
// reason.
#include <string>

#include "core/registry.hpp"
#include "report/report.hpp"

namespace CLI {
class App;
}

namespace xb {

class Backend;

// The help of --host-mem's `huge` value, for every family's option text.
inline constexpr const char* kHugeHelp =
    "huge: every host buffer on huge pages (hugetlb where reserved, else transparent huge "
    "pages); waived where the system has neither";

// --host-mem default|huge, for families whose buffers are otherwise the
// backend's own choice (remote, engine, kv).
void add_huge_pages_option(CLI::App& app, bool& huge);

// Turns huge pages on for `backend` when asked; Support::no with the reason
// when the backend or the system cannot give them (the run's records are
// then waived with it).
Support use_host_pages(Backend& backend, bool huge);

// `host_pages` in the report's summary: what the buffers got, e.g.
// "thp: 512 MiB of 512 MiB on huge pages"; nothing when not in use.
void note_host_pages(const Backend& backend, Report& report);

}  // namespace xb
