// Golden checks of the reporters on a fixed, hand-made report.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "family/coll/coll_family.hpp"
#include "family/copy/copy_family.hpp"
#include "report/report.hpp"
#include "report/table_kit.hpp"

namespace xb {
namespace {

Record rec(std::string kase, std::string method, int src, int dst, Bytes bytes,
           std::vector<double> us) {
  Record r;
  r.kase = std::move(kase);
  r.method = std::move(method);
  r.src = src;
  r.dst = dst;
  r.bytes = bytes;
  r.set_samples(us);
  r.verified = true;
  return r;
}

Report sample() {
  Report r;
  r.command = "copy";
  r.env = {"node1", "Test CPU", 2, "host", {{0, "NUMA node 0", 0}, {1, "NUMA node 0", 0}},
           1,       "",         {}};
  r.params = {{"type", std::string("d2d,p2p")}, {"warmup", std::int64_t{5}}, {"check", true}};
  r.results.push_back(rec("d2d", "dma", 0, 0, 1 << 20, {100, 110, 120}));
  r.results.push_back(rec("d2d", "dma", 0, 0, 2 << 20, {200, 210, 260}));
  r.results.push_back(rec("p2p", "dma", 0, 1, 1 << 20, {50, 60}));
  Record bad = rec("p2p", "dma", 1, 0, 1 << 20, {70, 80});
  bad.status = Status::failed;
  bad.verified = false;
  bad.reason = "verification failed: first wrong byte at offset 12";
  r.results.push_back(bad);
  r.results.push_back(rec("p2p_local", "dma", 0, 0, 1 << 20, {10}));
  r.results.push_back(Record::waived("p2p_local", "dma", 1, 1, 1 << 20, "not here"));
  Record extra = rec("d2h", "core", 0, -1, 4096, {1.5});
  extra.verified.reset();
  extra.extra = {{"cycles", 123.5}, {"note", std::string("a,b")}};
  r.results.push_back(extra);
  return r;
}

std::string golden(const std::string& name) {
  std::ifstream in(std::string(XFERBENCH_GOLDEN_DIR) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Set XFERBENCH_UPDATE_GOLDEN=1 to rewrite the golden files after a
// deliberate format change; review the diff before committing it.
void check_golden(const std::string& name, const std::string& actual) {
  if (std::getenv("XFERBENCH_UPDATE_GOLDEN")) {
    std::ofstream(std::string(XFERBENCH_GOLDEN_DIR) + "/" + name) << actual;
  }
  EXPECT_EQ(actual, golden(name)) << "golden file " << name << " differs";
}

}  // namespace

TEST(Report, JsonMatchesGolden) {
  auto doc = nlohmann::ordered_json::parse(format_json(sample()));
  doc["tool"]["git"] = "GIT";  // the build's git describe varies
  doc["tool"]["version"] = "VERSION";
  check_golden("report.json", doc.dump(2) + "\n");
}

TEST(Report, JsonHasTheSchemaFields) {
  const auto doc = nlohmann::json::parse(format_json(sample()));
  EXPECT_EQ(doc["schema"], "xferbench/1");
  for (const char* k : {"schema", "tool", "env", "command", "params", "results"})
    EXPECT_TRUE(doc.contains(k)) << k;
  const auto& r = doc["results"][0];
  for (const char* k : {"case", "method", "src", "dst", "bytes", "iters", "status", "reason",
                        "verified", "time_us", "gbps"})
    EXPECT_TRUE(r.contains(k)) << k;
  for (const char* k : {"min", "median", "mean", "max", "p99", "cv"})
    EXPECT_TRUE(r["time_us"].contains(k));
  EXPECT_DOUBLE_EQ(r["gbps"]["median"].get<double>(), 1048576.0 / 110e3);
  EXPECT_TRUE(doc["results"][6]["verified"].is_null());
  EXPECT_DOUBLE_EQ(doc["results"][6]["cycles"].get<double>(), 123.5);
}

TEST(Report, TableMatchesGolden) {
  check_golden("report.txt", render_table(*make_copy_family(), sample()));
}

TEST(Report, CsvMatchesGolden) { check_golden("report.csv", format_csv(sample())); }

Report coll_sample() {
  Report r;
  r.command = "coll";
  r.env = {"node1", "Test CPU", 2, "host", {{0, "NUMA node 0", 0}}, 4, "", {}};
  r.params = {{"collective", std::string("allreduce")}, {"agg", std::string("max")}};
  for (bool inplace : {false, true}) {
    Record x = rec("allreduce", "mpi", -1, -1, 1 << 20, {100, 120, 140});
    const double algbw = x.gbps_median;
    x.extra = {{"op", std::string("allreduce")},
               {"dtype", std::string("float")},
               {"redop", std::string("sum")},
               {"count", std::int64_t{262144}},
               {"inplace", inplace},
               {"algbw", algbw},
               {"busbw", algbw * 1.5},
               {"wrong", std::int64_t{inplace ? 2 : 0}}};
    if (inplace) {
      x.status = Status::failed;
      x.verified = false;
      x.reason = "#wrong = 2";
    }
    r.results.push_back(x);
  }
  r.summary = {{"avg_busbw_allreduce", 13.5}};
  return r;
}

TEST(Report, CollTableMatchesGolden) {
  check_golden("coll.txt", render_table(*make_coll_family(), coll_sample()));
}

TEST(Report, CollJsonMatchesGolden) {
  auto doc = nlohmann::ordered_json::parse(format_json(coll_sample()));
  doc["tool"]["git"] = "GIT";
  doc["tool"]["version"] = "VERSION";
  check_golden("coll.json", doc.dump(2) + "\n");
}

TEST(Report, ExitCodeFollowsFailedRecords) {
  Report r = sample();
  EXPECT_EQ(exit_code(r), 1);
  r.results.erase(r.results.begin() + 3);
  EXPECT_EQ(exit_code(r), 0);
}

}  // namespace xb

namespace xb {

// Fields that are lists of numbers: JSON arrays, one CSV cell, the wire
// keeps their types (an int list stays int, an empty list stays a list).
TEST(Report, ListFieldsInEveryFormat) {
  Report r = coll_sample();
  r.results.resize(1);
  Record& x = r.results[0];
  const FieldKey<std::vector<std::int64_t>> ints{"pair_counts"};
  const FieldKey<std::vector<double>> reals{"samples_us"};
  const FieldKey<std::vector<double>> none{"empty_us"};
  x.set(ints, std::vector<std::int64_t>{512, 256, 256});
  x.set(reals, std::vector<double>{0.5, 1.25});
  x.set(none, std::vector<double>{});
  EXPECT_EQ(x.get(ints), (std::vector<std::int64_t>{512, 256, 256}));
  const auto doc = nlohmann::json::parse(format_json(r));
  const auto& j = doc["results"][0];
  EXPECT_EQ(j["pair_counts"], nlohmann::json::parse("[512,256,256]"));
  EXPECT_EQ(j["samples_us"], nlohmann::json::parse("[0.5,1.25]"));
  EXPECT_TRUE(j["empty_us"].is_array() && j["empty_us"].empty());
  const std::string csv = format_csv(r);
  EXPECT_NE(csv.find("512;256;256"), std::string::npos) << csv;
  EXPECT_NE(csv.find("0.5;1.25"), std::string::npos) << csv;
  EXPECT_EQ(field_text(FieldValue{std::vector<double>{0.5, 1.25}}), "0.5,1.25");
  const std::vector<Record> back = records_from_wire(records_to_wire(r.results));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].get(ints), x.get(ints));
  EXPECT_EQ(back[0].get(reals), x.get(reals));
  EXPECT_EQ(back[0].get(none), std::optional<std::vector<double>>(std::vector<double>{}));
  EXPECT_FALSE(back[0].get(FieldKey<std::vector<double>>{"pair_counts"}));  // not a double list
}

}  // namespace xb
