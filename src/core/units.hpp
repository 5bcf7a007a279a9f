#pragma once
// Byte sizes: parsing of user input and human formatting.
#include <cstdint>
#include <string>
#include <string_view>

namespace xb {

using Bytes = std::uint64_t;

// Parses "4096", "4K"/"4KiB" (1024-based), "4KB" (1000-based), M/G/T likewise,
// case-insensitive suffixes. Throws UsageError naming `what` for negative,
// zero, malformed or overflowing input.
Bytes parse_size(std::string_view text, std::string_view what = "size");

// "4 KiB", "256 MiB", "3 B": exact binary units when divisible, else bytes.
std::string format_size(Bytes n);

// "4.59 GiB": two decimals in the largest binary unit, for capacities.
std::string format_capacity(Bytes n);

// Bytes per microsecond -> decimal GB/s (1e9 bytes/s); 0 when t <= 0.
double gbps(Bytes bytes, double time_us);

// Messages per second of `messages` moved in `time_us` (osu_mbw_mr's rate:
// window * iterations / time, here per iteration on its median); 0 when
// t <= 0.
double messages_per_second(double messages, double time_us);

}  // namespace xb
