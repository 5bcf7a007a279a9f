// The family registry and typed record fields: pure checks, no device.
#include <gtest/gtest.h>

#include <set>

#include "cli/cli.hpp"
#include "core/schema.hpp"

namespace xb {
namespace {

constexpr FieldKey<double> kBusbw{"busbw"};
constexpr FieldKey<std::int64_t> kWrong{"wrong"};
constexpr FieldKey<std::string> kDtype{"dtype"};

TEST(Record, TypedFieldsKeepOrderAndReplaceInPlace) {
  Record r;
  r.set(kDtype, "float");
  r.set(kBusbw, 1.5);
  r.set(kWrong, std::int64_t{3});
  r.set(kBusbw, 2.5);  // replaces, keeps its place
  ASSERT_EQ(r.extra.size(), 3u);
  EXPECT_EQ(r.extra[1].first, "busbw");
  EXPECT_EQ(r.get(kBusbw), 2.5);
  EXPECT_EQ(r.get(kDtype), std::string("float"));
  EXPECT_EQ(r.get_or(kWrong, std::int64_t{-1}), 3);
  // Another type under the same name (a file from an unknown writer) reads as absent.
  EXPECT_FALSE(r.get(FieldKey<double>{"wrong"}).has_value());
  EXPECT_FALSE(r.get(FieldKey<bool>{"missing"}).has_value());
}

TEST(RecordSchema, KeysAndHeadline) {
  RecordSchema s("coll");
  s.add(kDtype, FieldRole::key, "element type")
      .add(kBusbw, FieldRole::metric, "GB/s")
      .add(kWrong, FieldRole::info, "count");
  EXPECT_EQ(s.keys(), std::vector<std::string>{"dtype"});
  EXPECT_EQ(s.find("busbw")->type, FieldType::number);
  EXPECT_EQ(s.find("wrong")->type, FieldType::int64);
  EXPECT_EQ(s.find("nope"), nullptr);
  Record r;
  r.gbps_median = 7;
  r.set(kBusbw, 11.0);
  EXPECT_EQ(s.headline_name(), "gbps");
  EXPECT_EQ(s.headline_value(r), 7);
  s.headline(kBusbw);
  EXPECT_EQ(s.headline_value(r), 11);
}

TEST(Families, SixFamiliesEachWithItsCasesAndASoundSchema) {
  const Families all = cli::all_families();
  std::set<std::string> names;
  for (const auto& f : all) {
    SCOPED_TRACE(f->name());
    EXPECT_TRUE(names.insert(f->name()).second) << "duplicate family name";
    EXPECT_EQ(f->schema().family(), f->name());
    EXPECT_FALSE(f->summary().empty());
    Registry r;
    f->cases(r);
    ASSERT_FALSE(r.all().empty());
    for (const auto& def : r.all()) {
      EXPECT_EQ(def.family, f->name());
      EXPECT_EQ(def.key.rfind(f->name() + ".", 0), 0u) << def.key;
    }
    const std::string& h = f->schema().headline_name();
    if (h != RecordSchema::kGbps) {
      const FieldSpec* spec = f->schema().find(h);
      ASSERT_NE(spec, nullptr) << "headline " << h << " is not a field";
      EXPECT_EQ(spec->type, FieldType::number);
      EXPECT_EQ(spec->role, FieldRole::metric);
    }
    std::set<std::string> fields;
    for (const auto& spec : f->schema().fields())
      EXPECT_TRUE(fields.insert(spec.name).second) << "field " << spec.name << " twice";
  }
  EXPECT_EQ(names, (std::set<std::string>{"copy", "remote", "coll", "engine", "kv", "gemm-ar"}));
  EXPECT_EQ(find_family(all, "coll")->schema().headline_name(), "busbw");
  EXPECT_EQ(find_family(all, "nope"), nullptr);
}

}  // namespace
}  // namespace xb
