#include "govern/cost.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "govern/test_util.h"

namespace rsl::govern {
namespace {

std::string TempDir(const std::string& name) {
  std::string d = "/tmp/rsl-govern-" + name + "-" + std::to_string(getpid());
  RemoveAll(d);
  MakeDirs(d);
  return d;
}

TEST(PriceTable, DefaultsParseAndAreWrittenToTheStateDir) {
  std::string dir = TempDir("prices");
  Result<PriceTable> t = LoadPriceTable(dir);
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  EXPECT_TRUE(PathExists(dir + "/prices.yaml"));
  EXPECT_DOUBLE_EQ(*t->DevicePrice("A10G", "on-demand"), 0.62);
  EXPECT_DOUBLE_EQ(*t->DevicePrice("nvidia-l40s", "on-demand"), 1.35);
  EXPECT_DOUBLE_EQ(*t->DevicePrice("mystery-gpu", "on-demand"), 0.95);  // OpenCost default
  EXPECT_DOUBLE_EQ(t->CpuPrice("spot"), 0.006655);
  EXPECT_DOUBLE_EQ(t->CpuPrice("reserved"), 0.031611);  // falls back to on-demand
  // No spot price for a GPU: on-demand, as for CPU and memory, and the rate says so.
  Result<PriceTable::DeviceRate> spot = t->DeviceRateFor("A10G", "spot");
  ASSERT_TRUE(spot.ok()) << spot.error().ToString();
  EXPECT_DOUBLE_EQ(spot->price, 0.62);
  EXPECT_EQ(spot->kind, "on-demand");
  EXPECT_TRUE(spot->fallback());
  EXPECT_FALSE(t->DeviceRateFor("A10G", "on-demand")->fallback());
  RemoveAll(dir);
}

TEST(PriceTable, Errors) {
  auto bad_kind = ParsePriceTable("devices:\n  A100: {on-demnd: 1}\n", "p.yaml");
  ASSERT_FALSE(bad_kind.ok());
  EXPECT_EQ(bad_kind.error().ToString(),
            "p.yaml:2:10: INVALID_ARGUMENT devices.A100.on-demnd: unknown pricing kind "
            "\"on-demnd\" (did you mean \"on-demand\"?)");
  auto negative = ParsePriceTable("devices:\n  A100: {spot: -1}\n", "p.yaml");
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().path, "devices.A100.spot");
  auto syntax = ParsePriceTable("devices: [\n", "p.yaml");
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.error().code, "SPEC_PARSE_ERROR");
}

TEST(Cost, AllocationIsMaxOfRequestAndUse) {
  auto t = ParsePriceTable(
      "cpu_core_hour: {on-demand: 0.03}\nmemory_gib_hour: {on-demand: 0.004}\n"
      "devices: {A100: {on-demand: 4.0, spot: 1.2}}\n",
      "p.yaml");
  ASSERT_TRUE(t.ok());
  StepUsage u;
  u.gpus = 2;
  u.device_model = "NVIDIA-A100-SXM4-80GB";
  u.wall_ms = 2 * 3600 * 1000;            // 2 h
  u.cpu_request_millis = 4000;            // 4 cores requested
  u.cpu_used_ms = 6LL * 2 * 3600 * 1000;  // 6 cores on average: use wins
  u.memory_request_bytes = 16LL << 30;    // 16 GiB requested
  u.peak_memory_bytes = 8LL << 30;        // 8 GiB peak: request wins
  Result<StepCost> c = ComputeStepCost(u, *t);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->device_model, "A100");
  EXPECT_DOUBLE_EQ(c->cpu_cores, 6);
  EXPECT_DOUBLE_EQ(c->memory_gib, 16);
  EXPECT_DOUBLE_EQ(c->gpu_cost, 2 * 2 * 4.0);
  EXPECT_DOUBLE_EQ(c->cpu_cost, 6 * 2 * 0.03);
  EXPECT_DOUBLE_EQ(c->memory_cost, 16 * 2 * 0.004);
  EXPECT_DOUBLE_EQ(c->total, 16 + 0.36 + 0.128);
  u.pricing = "spot";
  EXPECT_DOUBLE_EQ(ComputeStepCost(u, *t)->gpu_cost, 2 * 2 * 1.2);
  EXPECT_EQ(ComputeStepCost(u, *t)->gpu_pricing, "spot");
  u.pricing = "reserved";  // not in the table: on-demand, recorded rather than dropped
  EXPECT_DOUBLE_EQ(ComputeStepCost(u, *t)->gpu_cost, 2 * 2 * 4.0);
  EXPECT_EQ(ComputeStepCost(u, *t)->gpu_pricing, "on-demand");
  // Neither the kind nor on-demand: an error naming the path.
  auto spot_only = ParsePriceTable("devices: {A100: {spot: 1.2}}\n", "p.yaml");
  ASSERT_TRUE(spot_only.ok());
  Result<StepCost> none = ComputeStepCost(u, *spot_only);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().path, "devices.A100.reserved");
}

// The default price table has no spot GPU prices: a spot strategy is priced on-demand for
// its GPUs (spot for CPU and memory) instead of failing the whole table.
TEST(Cost, SpotStrategyWithTheDefaultPrices) {
  auto prices = ParsePriceTable(DefaultPriceYaml(), "prices.yaml");
  ASSERT_TRUE(prices.ok()) << prices.error().ToString();
  Strategy s;
  s.name = "spot-run";
  s.gpus = 8;
  s.device_model = "A100";
  s.pricing = "spot";
  s.cpu_cores = 10;
  s.memory_gib = 100;
  Result<StrategyCost> c = PriceStrategy(s, 2, *prices);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->gpu_pricing, "on-demand");
  EXPECT_DOUBLE_EQ(c->hourly, 8 * 4.0966 + 10 * 0.006655 + 100 * 0.000892);
}

TEST(Cost, SeedStrategyTable) {
  Result<std::string> prices_text = ReadFile(kTestdata + "seed-prices.yaml");
  ASSERT_TRUE(prices_text.ok());
  auto prices = ParsePriceTable(*prices_text, "seed-prices.yaml");
  ASSERT_TRUE(prices.ok()) << prices.error().ToString();
  Result<Strategy> a = ReadStrategy(kTestdata + "strategy-default.yaml");
  Result<Strategy> b = ReadStrategy(kTestdata + "strategy-zero2.yaml");
  ASSERT_TRUE(a.ok()) << a.error().ToString();
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  EXPECT_EQ(a->gpus, 8);
  EXPECT_EQ(a->device_model, "A100");
  EXPECT_EQ(b->gpus, 8);  // from the step override
  EXPECT_EQ(b->pricing, "reserved");
  Result<StrategyCost> ca = PriceStrategy(*a, 9.2, *prices);
  Result<StrategyCost> cb = PriceStrategy(*b, 7.1, *prices);
  ASSERT_TRUE(ca.ok() && cb.ok());
  EXPECT_EQ(FormatMoney(ca->hourly), "12.80");
  EXPECT_EQ(FormatMoney(ca->total), "117.76");
  EXPECT_EQ(FormatMoney(cb->hourly), "8.45");
  EXPECT_EQ(FormatMoney(cb->total), "60.00");
}

TEST(Cost, RoundCents) {
  EXPECT_EQ(FormatMoney(59.995), "60.00");
  EXPECT_EQ(FormatMoney(8.45 * 7.1), "60.00");
  EXPECT_EQ(FormatMoney(0.004), "0.00");
  EXPECT_EQ(FormatMoney(1.005), "1.01");
  EXPECT_EQ(FormatMoney(-2.5), "-2.50");
}

CostRecord Rec(const std::string& run, const std::string& team, double total, int64_t at,
               const std::string& metrics = "{}") {
  CostRecord r;
  r.run_id = run;
  r.workload_id = "wl-1";
  r.workload = "fraud";
  r.namespace_ = "risk";
  r.step = "train";
  r.labels = {{"team", team}};
  r.pricing = "on-demand";
  r.exit_kind = "Succeeded";
  r.ended_at_ms = at;
  r.metrics_json = metrics;
  r.cost.total = total;
  r.cost.gpu_cost = total;
  r.cost.gpus = 1;
  r.cost.hours = total;
  return r;
}

TEST(Cost, StoreGroupAndPerMetric) {
  std::string dir = TempDir("store");
  auto store = CostStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  ASSERT_TRUE((*store)->Record(Rec("r1", "risk", 10, 1000, R"({"auc": 0.80})")).ok());
  ASSERT_TRUE((*store)->Record(Rec("r2", "risk", 6, 2000, R"({"auc": 0.83})")).ok());
  ASSERT_TRUE((*store)->Record(Rec("r3", "", 4, 3000, R"({"auc": 0.82})")).ok());
  auto all = (*store)->List(0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].labels.at("team"), "risk");
  auto recent = (*store)->List(1500);
  ASSERT_EQ(recent->size(), 2u);
  auto r2 = (*store)->ListRun("r2");
  ASSERT_TRUE(r2.ok()) << r2.error().ToString();
  ASSERT_EQ(r2->size(), 1u);
  EXPECT_DOUBLE_EQ((*r2)[0].cost.total, 6);
  EXPECT_TRUE((*store)->ListRun("r9")->empty());

  auto groups = GroupCosts(*all, "team");
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[0].key, "risk");
  EXPECT_DOUBLE_EQ((*groups)[0].total, 16);
  EXPECT_EQ((*groups)[1].key, "<none>");
  auto bad = GroupCosts(*all, "teem");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().hint, "did you mean \"team\"?");

  auto rows = CostPerMetric(*all, "auc", false);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_FALSE(rows[0].has_previous);
  EXPECT_TRUE(rows[1].improved);
  // r2 cost 6 for +0.03 auc = 3 hundredths -> 2.00 per 0.01.
  EXPECT_NEAR(rows[1].cost_per_hundredth, 2.0, 1e-9);
  EXPECT_FALSE(rows[2].improved);  // 0.83 -> 0.82
  RemoveAll(dir);
}

TEST(Cost, ParseSince) {
  EXPECT_EQ(*ParseSince("7d"), 7LL * 24 * 3600 * 1000);
  EXPECT_EQ(*ParseSince("12h"), 12LL * 3600 * 1000);
  EXPECT_FALSE(ParseSince("7").ok());
  EXPECT_FALSE(ParseSince("xd").ok());
}

}  // namespace
}  // namespace rsl::govern
