// Golden JSON checks of real runs of the binary on the host backend.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace {

struct CmdResult {
  int rc = -1;
  std::string out;
};

CmdResult run(const std::string& args) {
  const std::string cmd = std::string(XFERBENCH_BIN) + " " + args + " 2>/dev/null";
  CmdResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// The shape of a document: every key with the JSON type of its value, so
// figures can change while the schema cannot.
nlohmann::json shape(const nlohmann::json& j) {
  if (j.is_object()) {
    nlohmann::json s = nlohmann::json::object();
    for (auto it = j.begin(); it != j.end(); ++it) s[it.key()] = shape(it.value());
    return s;
  }
  if (j.is_array())
    return j.empty() ? nlohmann::json::array() : nlohmann::json::array({shape(j[0])});
  if (j.is_number()) return "number";
  return j.type_name();
}

}  // namespace

TEST(CliJson, CopyDocumentHasTheDesignSchema) {
  const std::string path = ::testing::TempDir() + "/xb_copy.json";
  const CmdResult r =
      run("copy -t d2d,h2d -s 64K -n 3 -w 1 --threads 2 --backend host --format json -o " + path);
  ASSERT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("Device to Device Test"), std::string::npos);  // table still on stdout
  std::ifstream in(path);
  const auto doc = nlohmann::json::parse(in);
  const auto expected = nlohmann::json::parse(R"({
    "schema": "string", "tool": {"version": "string", "git": "string"},
    "env": {"host": "string", "cpu": "string", "cores": "number", "backend": "string",
            "devices": [{"id": "number", "name": "string", "numa": "number"}], "ranks": "number",
            "software": {"mpi": "string", "ucx": "string", "hwloc": "string", "kernel": "string",
                         "os": "string"}},
    "command": "string",
    "params": {"type": "string", "method": "string", "device": "number", "src": "number",
               "dst": "number", "bidir": "boolean", "p2p_op": "string", "sizes": "string", "p2p_sizes": "string",
               "warmup": "number", "iters": "number", "p2p_iters": "number", "threads": "number",
               "tile": "number", "host_mem": "string", "check": "boolean", "d2d_count": "string"},
    "results": [{"case": "string", "method": "string", "src": "number", "dst": "number",
                 "bytes": "number", "iters": "number", "status": "string", "reason": "string",
                 "verified": "boolean",
                 "time_us": {"min": "number", "median": "number", "mean": "number",
                             "max": "number", "p99": "number", "cv": "number"},
                 "gbps": {"median": "number", "max": "number"}}]
  })");
  EXPECT_EQ(shape(doc), expected) << shape(doc).dump(2);
  EXPECT_EQ(doc["schema"], "xferbench/1");
  EXPECT_EQ(doc["command"], "copy");
  EXPECT_EQ(doc["env"]["backend"], "host");
  ASSERT_EQ(doc["results"].size(), 4u);  // d2d, h2d x dma, core
  for (const auto& rec : doc["results"]) {
    EXPECT_EQ(rec["status"], "ok");
    EXPECT_EQ(rec["verified"], true);
    EXPECT_EQ(rec["bytes"], 65536);
    EXPECT_EQ(rec["iters"], 3);
    EXPECT_GT(rec["gbps"]["median"].get<double>(), 0.0);
    EXPECT_LE(rec["time_us"]["min"].get<double>(), rec["time_us"]["median"].get<double>());
  }
  EXPECT_EQ(doc["results"][0]["case"], "d2d");
  EXPECT_EQ(doc["results"][2]["case"], "h2d");
  EXPECT_EQ(doc["results"][2]["src"], -1);
}

TEST(CliJson, TopoAndListDocuments) {
  const CmdResult t = run("topo --format json");
  ASSERT_EQ(t.rc, 0);
  const auto topo = nlohmann::json::parse(t.out);
  EXPECT_EQ(topo["command"], "topo");
  EXPECT_GE(topo["topo"]["cores"].get<int>(), 1);
  EXPECT_GE(topo["topo"]["numa_nodes"].size(), 1u);
  const auto n = topo["topo"]["numa_nodes"].size();
  EXPECT_EQ(topo["topo"]["numa_distances"].size(), n);
  const CmdResult l = run("list --format json");
  ASSERT_EQ(l.rc, 0);
  const auto list = nlohmann::json::parse(l.out);
  ASSERT_EQ(list["backends"].size(), 3u);
  EXPECT_EQ(list["backends"][2]["name"], "host");  // `auto` order: accelerators first
  EXPECT_TRUE(list["backends"][2]["available"]);
  std::set<std::string> families;
  int copy_cases = 0;
  for (const auto& b : list["benchmarks"]) {
    families.insert(b["family"].get<std::string>());
    copy_cases += b["family"] == "copy" ? 1 : 0;
  }
  EXPECT_EQ(copy_cases, 8);  // h2d, d2h, d2d, p2p, all_to_host, host_to_all, all_to_one, one_to_all
  EXPECT_EQ(families, (std::set<std::string>{"copy", "remote", "latency", "coll", "engine", "kv",
                                             "ep", "fleet", "gemm-ar", "doctor"}));
}
