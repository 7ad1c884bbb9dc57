#include "data/distinct.h"

#include <gtest/gtest.h>

#include <thread>

namespace rsl::data {
namespace {

TEST(Distinct, CountsStringsExactly) {
  DistinctCounter counter(true);
  KeyCollector* a = counter.NewCollector();
  KeyCollector* b = counter.NewCollector();
  for (int i = 0; i < 10000; i++) a->AddString("tx-" + std::to_string(i));
  for (int i = 5000; i < 15000; i++) b->AddString("tx-" + std::to_string(i));
  auto n = counter.Count(2);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 15000);
  EXPECT_EQ(counter.spilled_bytes(), 0);
}

TEST(Distinct, CountsIntsAndDoubles) {
  DistinctCounter counter(false);
  KeyCollector* c = counter.NewCollector();
  for (int i = 0; i < 1000; i++) c->AddInt(i % 700);
  c->AddDouble(0.0);
  c->AddDouble(-0.0);
  auto n = counter.Count(1);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 700);  // 0.0 and -0.0 share the bits of the int 0
}

TEST(Distinct, SpillsOverBudgetAndStaysExact) {
  DistinctCounter counter(true, /*budget_bytes=*/64 << 10);
  std::vector<std::thread> threads;
  std::vector<KeyCollector*> cs = {counter.NewCollector(), counter.NewCollector()};
  for (int t = 0; t < 2; t++) {
    threads.emplace_back([&, t] {
      // Both threads add the same 50,000 keys plus 1,000 of their own.
      for (int i = 0; i < 50000; i++) cs[t]->AddString("user-" + std::to_string(i));
      for (int i = 0; i < 1000; i++)
        cs[t]->AddString("own-" + std::to_string(t) + "-" + std::to_string(i));
    });
  }
  for (auto& t : threads) t.join();
  auto n = counter.Count(2);
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(*n, 52000);
  EXPECT_GT(counter.spilled_bytes(), 0);
}

TEST(Distinct, EmptyAndBinaryKeys) {
  DistinctCounter counter(true);
  KeyCollector* c = counter.NewCollector();
  c->AddString("");
  c->AddString("");
  c->AddString(std::string("a\0b", 3));
  c->AddString(std::string("a\0c", 3));
  auto n = counter.Count(1);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 3);
}

}  // namespace
}  // namespace rsl::data
