// Records to and from CBOR, for gathering them on rank 0.
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/record.hpp"

namespace xb {
namespace {

using json = nlohmann::json;

// [variant index, value]: keeps integers and doubles apart across the trip.
json field_to(const FieldValue& v) {
  return std::visit([&](const auto& x) { return json::array({v.index(), x}); }, v);
}

FieldValue field_from(const json& j) {
  switch (j.at(0).get<int>()) {
    case 0:
      return j.at(1).get<std::int64_t>();
    case 1:
      return j.at(1).get<double>();
    case 2:
      return j.at(1).get<std::string>();
    case 3:
      return j.at(1).get<bool>();
    case 4:
      return j.at(1).get<std::vector<std::int64_t>>();
    case 5:
      return j.at(1).get<std::vector<double>>();
    default:
      throw RuntimeError("records wire: unknown field type");
  }
}

json record_to(const Record& r) {
  const Stats& t = r.time_us;
  json extra = json::array();
  for (const auto& [k, v] : r.extra) extra.push_back({k, field_to(v)});
  return {r.kase,
          r.method,
          r.src,
          r.dst,
          r.bytes,
          r.iters,
          static_cast<int>(r.status),
          r.reason,
          r.verified ? json(*r.verified) : json(nullptr),
          json::array({t.min, t.median, t.mean, t.max, t.p99, t.cv}),
          r.gbps_median,
          r.gbps_max,
          extra};
}

Record record_from(const json& j) {
  Record r;
  r.kase = j.at(0).get<std::string>();
  r.method = j.at(1).get<std::string>();
  r.src = j.at(2).get<int>();
  r.dst = j.at(3).get<int>();
  r.bytes = j.at(4).get<Bytes>();
  r.iters = j.at(5).get<int>();
  r.status = static_cast<Status>(j.at(6).get<int>());
  r.reason = j.at(7).get<std::string>();
  if (!j.at(8).is_null()) r.verified = j.at(8).get<bool>();
  const auto& t = j.at(9);
  r.time_us = {t.at(0).get<double>(), t.at(1).get<double>(), t.at(2).get<double>(),
               t.at(3).get<double>(), t.at(4).get<double>(), t.at(5).get<double>()};
  r.gbps_median = j.at(10).get<double>();
  r.gbps_max = j.at(11).get<double>();
  for (const auto& e : j.at(12))
    r.extra.emplace_back(e.at(0).get<std::string>(), field_from(e.at(1)));
  return r;
}

}  // namespace

std::string records_to_wire(const std::vector<Record>& records) {
  json all = json::array();
  for (const auto& r : records) all.push_back(record_to(r));
  const auto bytes = json::to_cbor(all);
  return std::string(bytes.begin(), bytes.end());
}

std::vector<Record> records_from_wire(const std::string& wire) {
  std::vector<Record> out;
  try {
    for (const auto& j : json::from_cbor(wire)) out.push_back(record_from(j));
  } catch (const json::exception& e) {
    throw RuntimeError(std::string("malformed records from another rank: ") + e.what());
  }
  return out;
}

}  // namespace xb
