#include "base/arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <string>

namespace rsl {
namespace {

TEST(HugePageArena, AllocationsAreAlignedDisjointAndWritable) {
  HugePageArena arena(size_t{2} << 20);
  std::set<uintptr_t> seen;
  std::vector<std::pair<char*, size_t>> blocks;
  for (size_t i = 0; i < 200; i++) {
    size_t n = 1 + (i * 7919) % 50000;
    char* p = static_cast<char*>(arena.Allocate(n));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    std::memset(p, static_cast<int>(i), n);
    blocks.emplace_back(p, n);
  }
  // Every block still holds what was written to it: none overlaps another.
  for (size_t i = 0; i < blocks.size(); i++) {
    for (size_t j = 0; j < blocks[i].second; j++) {
      ASSERT_EQ(static_cast<unsigned char>(blocks[i].first[j]), static_cast<unsigned char>(i)) << i;
    }
  }
  EXPECT_GE(arena.mapped_bytes(), size_t{2} << 20);
}

TEST(HugePageArena, ALargeAllocationGetsItsOwnRegionAndLaterOnesDoNotOverlapIt) {
  HugePageArena arena(size_t{2} << 20);
  char* small = static_cast<char*>(arena.Allocate(1000));
  char* big = static_cast<char*>(arena.Allocate(size_t{5} << 20));
  std::memset(big, 0xab, size_t{5} << 20);
  char* after = static_cast<char*>(arena.Allocate(4096));
  std::memset(after, 0xcd, 4096);
  std::memset(small, 0x11, 1000);
  for (size_t i = 0; i < (size_t{5} << 20); i += 4093)
    ASSERT_EQ(static_cast<unsigned char>(big[i]), 0xab);
  EXPECT_TRUE(after >= big + (size_t{5} << 20) || after + 4096 <= big);
}

TEST(HugePageArena, ResetReusesTheRegions) {
  HugePageArena arena(size_t{2} << 20);
  for (int i = 0; i < 10; i++) arena.Allocate(1 << 20);
  const size_t mapped = arena.mapped_bytes();
  void* first = nullptr;
  arena.Reset();
  first = arena.Allocate(1 << 20);
  for (int i = 1; i < 10; i++) arena.Allocate(1 << 20);
  EXPECT_EQ(arena.mapped_bytes(), mapped);
  arena.Reset();
  EXPECT_EQ(arena.Allocate(64), first);
}

// Where the kernel offers transparent huge pages on advice, a touched region is backed by them;
// where it offers none ("never"), by small pages, and the arena works all the same.
TEST(HugePageArena, RegionsAreHugePagesWhereTheKernelOffersThem) {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string thp;
  std::getline(mode, thp);
  const bool offered = !thp.empty() && thp.find("[never]") == std::string::npos;
  HugePageArena arena(size_t{8} << 20);
  char* p = static_cast<char*>(arena.Allocate(size_t{8} << 20));
  for (size_t i = 0; i < (size_t{8} << 20); i += 4096) p[i] = 1;
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_region = false;
  long huge_kb = -1;
  const uintptr_t base = reinterpret_cast<uintptr_t>(p);
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {
      in_region = lo <= base && base < hi;
    } else if (in_region && line.rfind("AnonHugePages:", 0) == 0) {
      huge_kb = std::stol(line.substr(14));
      break;
    }
  }
  ASSERT_GE(huge_kb, 0) << "the arena's region is not in /proc/self/smaps";
  if (offered) {
    // The kernel may fall back to small pages when it has no free 2 MiB frame; on a machine
    // with memory to spare, at least one of the four is a huge page.
    EXPECT_GT(huge_kb, 0) << "no huge page backs the arena's region (THP mode: " << thp << ")";
  } else {
    EXPECT_EQ(huge_kb, 0);
  }
}

}  // namespace
}  // namespace rsl
