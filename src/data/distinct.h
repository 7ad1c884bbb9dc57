// Exact distinct counting of a unique key (not a sketch: a 99.99 % uniqueness threshold allows
// one duplicate in 10,000, far below any sketch's error).
//
// Each worker thread owns a KeyCollector. Keys are hash-partitioned (kPartitions by the top
// bits of a 64-bit hash). Integer keys are kept as themselves: their count is exact. A string
// key is kept as its 128-bit XXH3 fingerprint (as ClickHouse's uniqExact keeps a 128-bit hash
// of each string), not its bytes: two different keys are counted as one only if their 128-bit
// hashes collide, which for 10^10 keys has a probability below 10^-18. Keeping the bytes cost
// about 3x the memory and a third of a Parquet scan in page faults and copies (bench/README.md,
// "Parquet profile"). When the memory of all collectors passes the budget, a collector writes
// its partitions to spill files in the spill directory and starts over; Count() then handles
// one partition at a time, so peak memory is about budget + the largest partition.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/arena.h"
#include "base/status.h"

namespace rsl::data {

inline constexpr int kPartitionBits = 6;
inline constexpr int kPartitions = 1 << kPartitionBits;
//! Default memory for distinct keys before spilling: enough for ~33 M string keys (16 bytes
//! each) in memory, small enough to leave room on a 24 GiB CI machine running tests in parallel.
inline constexpr int64_t kDefaultDistinctBudget = 512ll << 20;

class DistinctCounter;

class KeyCollector {
 public:
  void AddString(std::string_view key);
  void AddInt(int64_t key);
  void AddDouble(double key);
  int64_t keys() const { return keys_; }

 private:
  friend class DistinctCounter;
  //! One partition's keys: int keys as themselves, one word each; string keys as the
  //! fingerprint's (low, high) 64-bit halves, two words each. Words live in blocks that never
  //! move, so growing copies nothing (a vector's doubling, its relocation and the page faults
  //! of memory touched twice were a third of a Parquet scan: bench/README.md, "Parquet
  //! profile, session 33").
  struct Part {
    struct Block {
      uint64_t* words;      //!< in the collector's arena
      size_t capacity = 0;  //!< words; all written but in the last block
    };
    std::vector<Block> blocks;
    uint64_t* at = nullptr;  //!< next free word of the last block
    uint64_t* end = nullptr;
    void Push(uint64_t a, HugePageArena* arena) {
      if (at == end) Grow(arena);
      *at++ = a;
    }
    //! Block sizes are even: a pair never straddles two blocks.
    void Push(uint64_t a, uint64_t b, HugePageArena* arena) {
      if (at == end) Grow(arena);
      at[0] = a;
      at[1] = b;
      at += 2;
    }
    void Grow(HugePageArena* arena);
    //! Calls fn(const uint64_t* words, size_t n) once per block, in order.
    template <class F>
    void ForEachBlock(F&& fn) const {
      for (size_t i = 0; i < blocks.size(); i++) {
        const uint64_t* w = blocks[i].words;
        fn(w, i + 1 < blocks.size() ? blocks[i].capacity : static_cast<size_t>(at - w));
      }
    }
    bool empty() const { return blocks.empty() || (blocks.size() == 1 && at == blocks[0].words); }
  };
  explicit KeyCollector(DistinctCounter* owner) : owner_(owner), parts_(kPartitions) {}
  void MaybeSpill();
  Status Spill();

  DistinctCounter* owner_;
  HugePageArena arena_;  //!< the parts' blocks
  std::vector<Part> parts_;
  int64_t keys_ = 0;
  int64_t bytes_ = 0;     //!< memory of parts_, as accounted against the budget
  int64_t reported_ = 0;  //!< part of bytes_ already added to the counter's total
  int64_t since_check_ = 0;
  Status spill_status_;
};

class DistinctCounter {
 public:
  //! `string_keys`: whether keys are strings (128-bit fingerprints) or 64-bit values.
  DistinctCounter(bool string_keys, int64_t budget_bytes = kDefaultDistinctBudget,
                  std::string spill_dir = "");
  ~DistinctCounter();
  DistinctCounter(const DistinctCounter&) = delete;
  DistinctCounter& operator=(const DistinctCounter&) = delete;

  //! A collector for one worker thread; owned by the counter. Thread-safe.
  KeyCollector* NewCollector();
  //! Exact number of distinct keys over every collector. Call once, after all adds.
  //! `threads` workers count partitions in parallel.
  Result<int64_t> Count(int threads);
  //! Bytes written to spill files (0 when everything fitted the budget).
  int64_t spilled_bytes() const { return spilled_bytes_; }
  bool string_keys() const { return string_keys_; }

 private:
  friend class KeyCollector;
  Result<int64_t> CountPartition(int p);
  std::string SpillPath(int p) const;

  bool string_keys_;
  int64_t budget_;
  std::string spill_dir_;
  bool own_spill_dir_ = false;
  std::atomic<int64_t> used_{0};
  std::atomic<int64_t> spilled_bytes_{0};
  std::mutex mu_;
  std::vector<std::unique_ptr<KeyCollector>> collectors_;
  std::vector<std::unique_ptr<std::mutex>> spill_mu_;  //!< one per partition file
};

//! 64-bit XXH3 hash of `bytes`.
uint64_t HashBytes(std::string_view bytes);
inline uint64_t MixInt(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace rsl::data
