#include "family/host_pages.hpp"

#include <CLI/CLI.hpp>

#include "backend/backend.hpp"

namespace xb {

void add_huge_pages_option(CLI::App& app, bool& huge) {
  app.add_option_function<std::string>(
         "--host-mem", [&huge](const std::string& m) { huge = m == "huge"; },
         std::string("host buffers: default (4 KiB pages) or ") + kHugeHelp)
      ->check(CLI::IsMember({"default", "huge"}))
      ->default_str("default");
}

Support use_host_pages(Backend& backend, bool huge) {
  return huge ? backend.use_huge_pages() : Support::yes();
}

void note_host_pages(const Backend& backend, Report& report) {
  if (std::string note = backend.huge_pages_note(); !note.empty())
    report.summary.emplace_back("host_pages", std::move(note));
}

}  // namespace xb
