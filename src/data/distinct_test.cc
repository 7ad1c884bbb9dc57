#include "data/distinct.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
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

// Int keys filling many of a partition's blocks (the first holds 1,024 keys, later ones
// double), in memory and spilled several times over, with repeats across the spills.
TEST(Distinct, IntKeysAcrossBlocksAndSpills) {
  for (int64_t budget : {int64_t{512} << 20, int64_t{256} << 10}) {
    DistinctCounter counter(false, budget);
    KeyCollector* c = counter.NewCollector();
    for (int64_t i = 0; i < 600000; i++) c->AddInt(i * 7919 % 400000);  // 400,000 distinct
    auto n = counter.Count(2);
    ASSERT_TRUE(n.ok()) << n.error().ToString();
    EXPECT_EQ(*n, 400000) << "budget " << budget;
    EXPECT_EQ(counter.spilled_bytes() > 0, budget < (int64_t{1} << 20)) << "budget " << budget;
  }
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

// The count against std::set's on random keys with many repeats, from a few keys to far more
// than one partition's bucket holds: ints around 0 (0 is the counting table's empty mark),
// multiples of a power of two (the same low bits) and strings.
TEST(Distinct, MatchesASetOnRandomKeysWithRepeats) {
  std::mt19937_64 rng(17);
  for (int n : {1, 7, 300, 5000, 50000}) {
    DistinctCounter ints(false);
    DistinctCounter strings(true);
    KeyCollector* ci = ints.NewCollector();
    KeyCollector* cs = strings.NewCollector();
    std::set<int64_t> want_ints;
    std::set<std::string> want_strings;
    for (int i = 0; i < n; i++) {
      int64_t k;
      switch (rng() % 3) {
        case 0:
          k = static_cast<int64_t>(rng() % 64) - 32;
          break;  // near 0, repeated
        case 1:
          k = static_cast<int64_t>(rng() % (n + 1)) << 20;
          break;  // low bits all 0
        default:
          k = static_cast<int64_t>(rng() % (4 * n + 1));
          break;
      }
      ci->AddInt(k);
      want_ints.insert(k);
      std::string s = "key-" + std::to_string(k % (n / 2 + 1));
      cs->AddString(s);
      want_strings.insert(s);
    }
    auto got_ints = ints.Count(2);
    auto got_strings = strings.Count(2);
    ASSERT_TRUE(got_ints.ok() && got_strings.ok());
    EXPECT_EQ(*got_ints, static_cast<int64_t>(want_ints.size())) << "n=" << n;
    EXPECT_EQ(*got_strings, static_cast<int64_t>(want_strings.size())) << "n=" << n;
  }
}

}  // namespace
}  // namespace rsl::data
