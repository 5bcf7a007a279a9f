// Code shared by the device backends (backend/common/device_common.hpp).
#include "backend/common/device_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace xb {

void check_device_index(int device, std::size_t count, const std::string& backend,
                        const char* unit) {
  if (device < 0 || device >= static_cast<int>(count))
    throw UsageError(fmt::format("device {} out of range: the {} backend has {} {}{}", device,
                                 backend, count, unit, count == 1 ? "" : "s"));
}

std::vector<Support> peer_matrix(int n, const std::function<Support(int src, int dst)>& probe) {
  std::vector<Support> out;
  out.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(n));
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) out.push_back(s == d ? Support::yes() : probe(s, d));
  return out;
}

BackendStatus failed_probe(const std::string& backend, const char* unit, const std::string& error,
                           bool absence, const std::string& driver_dir,
                           const std::string& node_prefix) {
  // An entry of the directory, or with a prefix a device node: the prefix
  // and a number ("davinci3", not "davinci_manager").
  const auto names_device = [&](const std::string& name) {
    if (node_prefix.empty()) return true;
    return name.size() > node_prefix.size() && name.rfind(node_prefix, 0) == 0 &&
           std::all_of(name.begin() + static_cast<std::ptrdiff_t>(node_prefix.size()), name.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  std::size_t listed = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(driver_dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    listed += names_device(it->path().filename().string());
  if (absence && listed == 0)
    return {backend, false, fmt::format("no usable {}: {}", unit, error), false};
  return {backend, false,
          listed > 0 ? fmt::format("{} {}{} present ({}) but unusable: {}", listed, unit,
                                   listed == 1 ? "" : "s", driver_dir, error)
                     : fmt::format("{} present but unusable: {}", unit, error),
          true};
}

void* alloc_pageable(Bytes size) {
  void* p = alloc_pages(size);
  if (!p) throw RuntimeError(fmt::format("out of host memory for {}", format_capacity(size)));
  std::memset(p, 0, page_alloc_size(size));  // fault the pages in outside timing
  return p;
}

int resident_blocks(int per_sm, int sms, const char* mps_percentage) {
  if (mps_percentage && *mps_percentage) {
    char* end = nullptr;
    const double pct = std::strtod(mps_percentage, &end);
    if (end && *end == '\0' && pct > 0 && pct <= 100)
      sms = std::max(1, static_cast<int>(sms * pct / 100.0));
  }
  return std::max(0, per_sm) * std::max(0, sms);
}

int copy_blocks_per_leg(int sms, int legs, int resident, int threads) {
  if (threads > 0) return threads;
  const int whole = 2 * std::max(1, sms);
  if (legs <= 1) return whole;
  const int budget = resident > 0 ? std::min(whole, resident) : whole;
  return std::max(1, budget / legs);
}

bool copy_legs_coresident(int legs, int blocks, int resident) {
  return legs <= 1 || resident <= 0 ||
         static_cast<long long>(legs) * blocks <= static_cast<long long>(resident);
}

}  // namespace xb
