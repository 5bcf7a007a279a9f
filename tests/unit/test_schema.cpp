// The record schema's checks and its printed forms: undeclared_fields (a
// field a family writes but forgot to declare), the role and type names, and
// the field list of `--fields` and `list --format json`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/journal.hpp"
#include "core/schema.hpp"
#include "report/json_common.hpp"
#include "report/report.hpp"

namespace xb {
namespace {

constexpr FieldKey<double> kBusbw{"busbw"};
constexpr FieldKey<std::string> kOp{"op"};
constexpr FieldKey<std::int64_t> kRanks{"ranks"};
constexpr FieldKey<std::vector<double>> kSamples{"samples"};

RecordSchema sample_schema() {
  RecordSchema s("demo");
  s.add(kOp, FieldRole::key, "the collective")
      .add(kBusbw, FieldRole::metric, "bus bandwidth, GB/s")
      .add(kSamples, FieldRole::info, "every sample, us");
  s.headline(kBusbw);
  return s;
}

TEST(Schema, DeclaredFieldsPass) {
  Record r;
  r.set(kOp, "allreduce");
  r.set(kBusbw, 12.5);
  r.set(kSamples, std::vector<double>{1, 2});
  EXPECT_TRUE(undeclared_fields(sample_schema(), r).empty());
  EXPECT_TRUE(undeclared_fields(sample_schema(), Record{}).empty());  // fields may be absent
}

TEST(Schema, UndeclaredFieldsNamedInRecordOrder) {
  Record r;
  r.set(kRanks, std::int64_t{4});
  r.set(kOp, "allreduce");
  r.set(FieldKey<bool>{"inplace"}, true);
  EXPECT_EQ(undeclared_fields(sample_schema(), r), (std::vector<std::string>{"ranks", "inplace"}));
}

TEST(Schema, FieldOfAnotherTypeIsUndeclared) {
  Record r;
  r.set(FieldKey<std::int64_t>{"busbw"}, std::int64_t{12});  // declared a number
  r.set(FieldKey<std::vector<std::int64_t>>{"samples"}, std::vector<std::int64_t>{1});  // a list
  EXPECT_EQ(undeclared_fields(sample_schema(), r), (std::vector<std::string>{"busbw"}));
}

TEST(Schema, RunFieldsAreDeclaredForEveryFamily) {
  Record r;
  r.set(kCycle, std::int64_t{3});
  r.set(kTUnix, 1.7e9);
  EXPECT_TRUE(undeclared_fields(RecordSchema("bare"), r).empty());
  r.set(FieldKey<double>{"cycle"}, 3.0);  // the run writes an int64
  EXPECT_EQ(undeclared_fields(RecordSchema("bare"), r), (std::vector<std::string>{"cycle"}));
}

TEST(Schema, TypeOfValue) {
  EXPECT_EQ(field_type_of(FieldValue(std::int64_t{1})), FieldType::int64);
  EXPECT_EQ(field_type_of(FieldValue(1.5)), FieldType::number);
  EXPECT_EQ(field_type_of(FieldValue(std::string("x"))), FieldType::text);
  EXPECT_EQ(field_type_of(FieldValue(true)), FieldType::boolean);
  EXPECT_EQ(field_type_of(FieldValue(std::vector<double>{})), FieldType::list);
  EXPECT_EQ(field_type_of(FieldValue(std::vector<std::int64_t>{})), FieldType::list);
}

TEST(Schema, RoleAndTypeNames) {
  EXPECT_STREQ(to_string(FieldRole::key), "key");
  EXPECT_STREQ(to_string(FieldRole::metric), "metric");
  EXPECT_STREQ(to_string(FieldRole::info), "info");
  EXPECT_STREQ(to_string(FieldType::boolean), "boolean");
  EXPECT_STREQ(to_string(FieldType::list), "list");
}

TEST(Schema, FieldsTableShowsEveryFieldAndTheHeadline) {
  const std::string t = format_fields(sample_schema());
  EXPECT_NE(t.find("Fields of demo records"), std::string::npos) << t;
  // One column as wide as the longest name, run fields included (wrong_rate_lo).
  EXPECT_NE(t.find("  op             text     key     the collective\n"), std::string::npos) << t;
  EXPECT_NE(t.find("  busbw          number   metric  bus bandwidth, GB/s\n"), std::string::npos)
      << t;
  EXPECT_NE(t.find("  samples        list     info    every sample, us\n"), std::string::npos) << t;
  EXPECT_NE(t.find("compare and --min-bw judge busbw"), std::string::npos) << t;
  EXPECT_NE(t.find("  cycle          int64    info    --duration, --cycles"), std::string::npos)
      << t;
  EXPECT_NE(t.find("  wrong_rate_lo  number   info    --check every: the rate's 95 % interval"),
            std::string::npos)
      << t;
  EXPECT_NE(format_fields(RecordSchema("bare")).find("(none)"), std::string::npos);
}

TEST(Schema, CommonFieldsAreWhatTheJsonWriterWrites) {
  std::vector<std::string> written;
  const ojson doc = record_json(Record{});
  for (const auto& item : doc.items()) written.push_back(item.key());
  EXPECT_EQ(written, std::vector<std::string>(kCommonFields.begin(), kCommonFields.end()));
}

TEST(Schema, ListJsonCarriesEachFamilysFields) {
  ListView view;
  view.schemas.push_back(sample_schema());
  const auto doc = nlohmann::json::parse(format_list(view, EnvInfo{}, Format::json));
  ASSERT_EQ(doc["families"].size(), 1u);
  const auto& fam = doc["families"][0];
  EXPECT_EQ(fam["name"], "demo");
  EXPECT_EQ(fam["headline"], "busbw");
  ASSERT_EQ(fam["fields"].size(), 3u);
  EXPECT_EQ(fam["fields"][1], (nlohmann::json{{"name", "busbw"},
                                              {"type", "number"},
                                              {"role", "metric"},
                                              {"help", "bus bandwidth, GB/s"}}));
  EXPECT_EQ(doc["common_fields"].size(), kCommonFields.size());
  ASSERT_EQ(doc["run_fields"].size(), run_fields().size());
  EXPECT_EQ(doc["run_fields"][0]["name"], "cycle");
}

}  // namespace
}  // namespace xb
