#include "coll/dtype.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

#include "core/error.hpp"

namespace xb {
namespace {

constexpr DType kAllTypes[] = {DType::int8,    DType::uint8,  DType::int32,   DType::int64,
                               DType::half,    DType::bf16,   DType::float32, DType::float64,
                               DType::fp8e4m3, DType::fp8e5m2};
constexpr RedOp kAllOps[] = {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg};

template <class All, class Name>
std::string names_of(const All& all, Name name) {
  std::string names;
  for (auto t : all) names += std::string(names.empty() ? "" : ", ") + name(t);
  return names;
}

template <class T, class All, class Name>
std::vector<T> parse_list(const std::string& list, const All& all, Name name, const char* what) {
  std::vector<T> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto comma = list.find(',', start);
    const std::string item =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item == "all") {
      out.assign(std::begin(all), std::end(all));
    } else if (!item.empty()) {
      bool found = false;
      for (T t : all)
        if (item == name(t)) {
          if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
          found = true;
        }
      if (!found)
        throw UsageError(
            fmt::format("unknown {} '{}' ({}, or all)", what, item, names_of(all, name)));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.empty()) throw UsageError(fmt::format("no {} given", what));
  return out;
}

template <class T>
T read_as(const void* base, std::size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * sizeof(T), sizeof(T));
  return v;
}

template <class T>
void write_as(void* base, std::size_t i, T v) {
  std::memcpy(static_cast<char*>(base) + i * sizeof(T), &v, sizeof(T));
}

}  // namespace

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::int8:
    case DType::uint8:
    case DType::fp8e4m3:
    case DType::fp8e5m2:
      return 1;
    case DType::half:
    case DType::bf16:
      return 2;
    case DType::int32:
    case DType::float32:
      return 4;
    case DType::int64:
    case DType::float64:
      return 8;
  }
  return 8;
}

const char* to_string(DType t) {
  constexpr const char* names[] = {"int8", "uint8", "int32",  "int64",   "half",
                                   "bf16", "float", "double", "fp8e4m3", "fp8e5m2"};
  static_assert(std::size(names) == std::size(kAllTypes));
  return names[static_cast<int>(t)];
}

const char* to_string(RedOp op) {
  constexpr const char* names[] = {"sum", "prod", "min", "max", "avg"};
  return names[static_cast<int>(op)];
}

std::vector<DType> parse_dtypes(const std::string& list) {
  return parse_list<DType>(
      list, kAllTypes, [](DType t) { return to_string(t); }, "dtype");
}

std::vector<RedOp> parse_redops(const std::string& list) {
  return parse_list<RedOp>(
      list, kAllOps, [](RedOp o) { return to_string(o); }, "redop");
}

std::string dtype_names() {
  return names_of(kAllTypes, [](DType t) { return to_string(t); });
}

std::string redop_names() {
  return names_of(kAllOps, [](RedOp o) { return to_string(o); });
}

double load(DType t, const void* base, std::size_t i) {
  switch (t) {
    case DType::int8:
      return read_as<std::int8_t>(base, i);
    case DType::uint8:
      return read_as<std::uint8_t>(base, i);
    case DType::int32:
      return read_as<std::int32_t>(base, i);
    case DType::int64:
      return static_cast<double>(read_as<std::int64_t>(base, i));
    case DType::half:
      return half_to_float(read_as<std::uint16_t>(base, i));
    case DType::bf16:
      return bf16_to_float(read_as<std::uint16_t>(base, i));
    case DType::float32:
      return read_as<float>(base, i);
    case DType::float64:
      return read_as<double>(base, i);
    case DType::fp8e4m3:
      return fp8e4m3_to_float(read_as<std::uint8_t>(base, i));
    case DType::fp8e5m2:
      return fp8e5m2_to_float(read_as<std::uint8_t>(base, i));
  }
  return 0;
}

void store(DType t, void* base, std::size_t i, double v) {
  switch (t) {
    case DType::int8:
      return write_as(base, i, static_cast<std::int8_t>(v));
    case DType::uint8:
      return write_as(base, i, static_cast<std::uint8_t>(v));
    case DType::int32:
      return write_as(base, i, static_cast<std::int32_t>(v));
    case DType::int64:
      return write_as(base, i, static_cast<std::int64_t>(v));
    case DType::half:
      return write_as(base, i, float_to_half(static_cast<float>(v)));
    case DType::bf16:
      return write_as(base, i, float_to_bf16(static_cast<float>(v)));
    case DType::float32:
      return write_as(base, i, static_cast<float>(v));
    case DType::float64:
      return write_as(base, i, v);
    case DType::fp8e4m3:
      return write_as(base, i, float_to_fp8e4m3(static_cast<float>(v)));
    case DType::fp8e5m2:
      return write_as(base, i, float_to_fp8e5m2(static_cast<float>(v)));
  }
}

}  // namespace xb
