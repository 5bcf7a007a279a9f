// The family registry and typed record fields: pure checks, no device.
#include <gtest/gtest.h>

#include <set>

#include "backend/common/placement.hpp"
#include "backend/select/select.hpp"
#include "cli/cli.hpp"
#include "core/error.hpp"
#include "core/schema.hpp"
#include "family/backend_choice.hpp"
#include "family/parse.hpp"

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

TEST(Families, TenFamiliesEachWithItsCasesAndASoundSchema) {
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
  EXPECT_EQ(names, (std::set<std::string>{"copy", "remote", "latency", "coll", "engine", "kv", "ep",
                                          "fleet", "gemm-ar", "doctor"}));
  EXPECT_EQ(find_family(all, "coll")->schema().headline_name(), "busbw");
  EXPECT_EQ(find_family(all, "nope"), nullptr);
}

TEST(Placement, DeviceClashOnFakeNodeLayouts) {
  // Two nodes with two GPUs each, four ranks: one rank per GPU.
  EXPECT_EQ(device_clash({{0, "a", 0}, {1, "a", 1}, {2, "b", 0}, {3, "b", 1}}, "GPU"), "");
  // Three ranks on a two-GPU node: local rank 2 wraps onto GPU 0.
  EXPECT_EQ(device_clash({{0, "a", 0}, {1, "a", 1}, {2, "a", 0}}, "GPU"),
            "ranks 0 and 2 on host a share GPU 0");
  // Ranks given one GPU each (CUDA_VISIBLE_DEVICES) see index 0 but not the same GPU.
  EXPECT_EQ(device_clash({{0, "a", 0, "0000:1a:00.0"}, {1, "a", 0, "0000:3b:00.0"}}, "GPU"), "");
  EXPECT_EQ(device_clash({{0, "a", 0, "0000:1a:00.0"}, {1, "a", 0, "0000:1a:00.0"}}, "GPU"),
            "ranks 0 and 1 on host a share GPU 0 (0000:1a:00.0)");
  // The same device index on two hosts is two devices.
  EXPECT_EQ(device_clash({{0, "a", 0}, {1, "b", 0}}, "NPU"), "");
  EXPECT_EQ(device_clash({{0, "a", 0}, {1, "b", 0}, {2, "b", 0}}, "NPU"),
            "ranks 1 and 2 on host b share NPU 0");
}

// A family that refuses some backends, to drive choose_backend.
class Picky final : public Family {
 public:
  explicit Picky(std::string refuse, bool judges = false)
      : refuse_(std::move(refuse)), judges_(judges) {}
  bool judges_machines() const override { return judges_; }
  std::string name() const override { return "picky"; }
  std::string summary() const override { return "test"; }
  const RecordSchema& schema() const override { return schema_; }
  void cases(Registry& r) const override { r.add({"picky.x", "picky", "x", {}}); }
  void add_options(CLI::App&) override {}
  int run(const Invocation&) override { return 0; }
  std::string tables(const Report&) const override { return ""; }
  Support fits(Backend& b, Runtime*) const override {
    return b.name() == refuse_ ? Support::no("picky refuses " + refuse_) : Support::yes();
  }

 private:
  std::string refuse_;
  bool judges_ = false;
  RecordSchema schema_{"picky"};
};

// A GPU present but failing (CUDA review N7): never silently passed over
// for the host; a family that judges machines gets it as its finding.
TEST(ChooseBackend, ABrokenBackendIsAnErrorNotAnAbsence) {
  const std::vector<BackendStatus> st = {
      {"cuda", false,
       "1 GPU present (/proc/driver/nvidia/gpus) but unusable: system not yet "
       "initialized (cudaErrorSystemNotReady)",
       true},
      {"host", true, "", false}};
  try {
    choose_backend(Picky("none"), "auto", nullptr, st);
    FAIL() << "auto must not measure the host in place of a broken GPU";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("backend 'cuda' is not usable: 1 GPU present"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--backend host"), std::string::npos) << e.what();
  }
  EXPECT_THROW(choose_backend(Picky("none"), "cuda", nullptr, st), RuntimeError);
  const ChosenBackend judged = choose_backend(Picky("none", true), "auto", nullptr, st);
  EXPECT_EQ(judged.backend->name(), "host");
  EXPECT_NE(judged.broken.find("cuda: 1 GPU present"), std::string::npos) << judged.broken;
  // Named, the host still runs beside a broken GPU, for every family.
  EXPECT_EQ(choose_backend(Picky("none"), "host", nullptr, st).backend->name(), "host");
  // An absent GPU is passed over, as before.
  const std::vector<BackendStatus> absent = {{"cuda", false, "no usable GPU: ...", false},
                                             {"host", true, "", false}};
  const ChosenBackend c = choose_backend(Picky("none"), "auto", nullptr, absent);
  EXPECT_EQ(c.backend->name(), "host");
  EXPECT_EQ(c.broken, "");
}

TEST(ChooseBackend, ExplicitMustFitAutoTakesTheFirstThatDoes) {
  const ChosenBackend c = choose_backend(Picky("none"), "host", nullptr);
  EXPECT_EQ(c.backend->name(), "host");
  EXPECT_EQ(c.note, "");
  try {
    choose_backend(Picky("host"), "host", nullptr);
    FAIL() << "an explicit backend that does not fit must be a usage error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "picky refuses host");
  }
  // `auto` on any machine: the first available backend that fits; the host
  // comes last, so refusing it leaves nothing (the reason is the error).
  std::string first;
  for (const auto& p : probe_backends())
    if (p.available && first.empty()) first = p.name;
  const ChosenBackend any = choose_backend(Picky("none"), "auto", nullptr);
  EXPECT_EQ(any.backend->name(), first);
  EXPECT_EQ(any.note, "");
  if (first == "host") {
    EXPECT_THROW(choose_backend(Picky("host"), "auto", nullptr), UsageError);
  } else {  // an accelerator comes first: refusing it leaves the host, with the reason
    const ChosenBackend host = choose_backend(Picky(first), "auto", nullptr);
    EXPECT_EQ(host.backend->name(), "host");
    EXPECT_NE(host.note.find("auto passed over " + first + ": picky refuses " + first),
              std::string::npos)
        << host.note;
  }
}

TEST(ParseWindow, OnePositiveCountInRange) {
  EXPECT_EQ(parse_window("64"), 64);
  EXPECT_EQ(parse_window("1"), 1);
  EXPECT_EQ(parse_window(std::to_string(kMaxWindow)), kMaxWindow);
  auto message = [](const std::string& text) {
    try {
      parse_window(text);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("0"), "--window '0': '0' is not a positive count (give 64)");
  EXPECT_EQ(message("-3"), "--window '-3': '-3' is not a positive count (give 64)");
  EXPECT_EQ(message("abc"), "--window 'abc': 'abc' is not a positive count (give 64)");
  EXPECT_EQ(message("8k"), "--window '8k': '8k' is not a positive count (give 64)");
  EXPECT_EQ(message(""), "--window needs a count (give 64)");
  EXPECT_EQ(message("4,8"), "--window '4,8': one count, not a list (give 64)");
  EXPECT_EQ(message("65537"), "--window 65537: more than the 65536 allowed");
}

// A list of things to measure names each once (a repeat is dropped:
// nothing is measured twice); a list per lane keeps its order and repeats;
// an empty value or item is refused with the option's name.
TEST(OptionLists, SetsEachItemOnceListsInOrderNothingEmpty) {
  using V = std::vector<std::string>;
  EXPECT_EQ(option_set("--op", "get,put,get", "get"), (V{"get", "put"}));
  EXPECT_EQ(option_set("--op", "get,get", "get"), (V{"get"}));
  EXPECT_EQ(option_list("--nic", "lo,eth0,lo", "lo"), (V{"lo", "eth0", "lo"}));
  for (auto* parse : {&option_list, &option_set}) {
    EXPECT_THROW((*parse)("--op", "", "get"), UsageError);
    EXPECT_THROW((*parse)("--op", "get,,put", "get"), UsageError);
    EXPECT_THROW((*parse)("--op", "get,", "get"), UsageError);
  }
  EXPECT_EQ(each_once(parse_count_list("--blocks", "1,1,2,1", 64, "1,2")),
            (std::vector<int>{1, 2}));
  EXPECT_EQ(parse_index_list("--device", "1,0,1", "0"), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(parse_thread_counts("1,1,1", 64).values, (std::vector<int>{1}));
}

}  // namespace
}  // namespace xb
