#include "data/distinct.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/codes.h"
#include "base/file.h"

// xxHash's XXH3 inlined (Debian's libxxhash-dev header): no library to link or to depend on.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rsl::data {
namespace {

// Collectors check the shared budget every this many keys, so the atomic is not contended.
constexpr int64_t kBudgetCheckEvery = 4096;

inline uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

int PartitionOf(uint64_t hash) { return static_cast<int>(hash >> (64 - kPartitionBits)); }

// Counts the distinct values among `values`, and appends each value seen more than once to
// *repeated (sorted and unique on return). A radix pass first splits the values by 8 bits of
// a multiplicative mix into 256 buckets of a few hundred to a few thousand values; each bucket
// is then counted in an open-addressing set small enough for the first-level cache. This is
// about three times faster than sorting the partition (bench/README.md, Parquet profile).
int64_t CountDistinct(const std::vector<uint64_t>& values, std::vector<uint64_t>* repeated) {
  constexpr int kBucketBits = 8;
  constexpr int kBuckets = 1 << kBucketBits;
  auto mix = [](uint64_t x) { return x * 0x9e3779b97f4a7c15ull; };
  std::vector<uint32_t> start(kBuckets + 1, 0);
  for (uint64_t v : values) start[(mix(v) >> (64 - kBucketBits)) + 1]++;
  for (int b = 0; b < kBuckets; b++) start[b + 1] += start[b];
  std::vector<uint64_t> sorted(values.size());
  {
    std::vector<uint32_t> at(start.begin(), start.end() - 1);
    for (uint64_t v : values) sorted[at[mix(v) >> (64 - kBucketBits)]++] = v;
  }
  int64_t distinct = 0;
  std::vector<uint64_t> table;
  for (int b = 0; b < kBuckets; b++) {
    const uint32_t lo = start[b], hi = start[b + 1];
    if (lo == hi) continue;
    int bits = 4;
    while ((size_t{1} << bits) < 2 * size_t{hi - lo}) bits++;
    const size_t mask = (size_t{1} << bits) - 1;
    table.assign(size_t{1} << bits, 0);
    bool zero = false;  // 0 marks an empty slot: the value 0 is tracked apart
    for (uint32_t i = lo; i < hi; i++) {
      const uint64_t v = sorted[i];
      if (v == 0) {
        if (zero) repeated->push_back(0);
        distinct += zero ? 0 : 1;
        zero = true;
        continue;
      }
      // The slot from the mix's bits below the bucket's, so a bucket's values spread.
      size_t slot = (mix(v) >> (64 - kBucketBits - bits)) & mask;
      while (table[slot] != 0 && table[slot] != v) slot = (slot + 1) & mask;
      if (table[slot] == v) {
        repeated->push_back(v);
      } else {
        table[slot] = v;
        distinct++;
      }
    }
  }
  std::sort(repeated->begin(), repeated->end());
  repeated->erase(std::unique(repeated->begin(), repeated->end()), repeated->end());
  return distinct;
}

}  // namespace

uint64_t HashBytes(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

void KeyCollector::Part::Grow(HugePageArena* arena) {
  // 8 KiB, doubling to 512 KiB: small inputs touch little memory, large ones few blocks.
  // Uninitialized: a page is touched only when a key is written to it.
  constexpr size_t kFirstWords = 1024, kMaxWords = 65536;
  const size_t capacity =
      blocks.empty() ? kFirstWords : std::min(blocks.back().capacity * 2, kMaxWords);
  blocks.push_back({static_cast<uint64_t*>(arena->Allocate(capacity * 8)), capacity});
  at = blocks.back().words;
  end = at + capacity;
}

void KeyCollector::AddString(std::string_view key) {
  const XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  parts_[PartitionOf(h.low64)].Push(h.low64, h.high64, &arena_);
  keys_++;
  bytes_ += 16;
  if (++since_check_ >= kBudgetCheckEvery) MaybeSpill();
}

void KeyCollector::AddInt(int64_t key) {
  uint64_t v = static_cast<uint64_t>(key);
  parts_[PartitionOf(MixInt(v))].Push(v, &arena_);
  keys_++;
  bytes_ += 8;
  if (++since_check_ >= kBudgetCheckEvery) MaybeSpill();
}

void KeyCollector::AddDouble(double key) {
  if (key == 0) key = 0;  // -0.0 and 0.0 are one value
  int64_t bits;
  std::memcpy(&bits, &key, 8);
  AddInt(bits);
}

void KeyCollector::MaybeSpill() {
  since_check_ = 0;
  int64_t delta = bytes_ - reported_;
  reported_ = bytes_;
  int64_t used = owner_->used_.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (used <= owner_->budget_ || !spill_status_.ok()) return;
  spill_status_ = Spill();
}

Status KeyCollector::Spill() {
  if (owner_->spill_dir_.empty()) {
    std::lock_guard<std::mutex> lock(owner_->mu_);
    if (owner_->spill_dir_.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/rsl-distinct-XXXXXX";
      if (mkdtemp(templ.data()) == nullptr) {
        return OsError(codes::kIoError, "cannot create spill directory", templ, errno);
      }
      owner_->spill_dir_ = templ;
      owner_->own_spill_dir_ = true;
    }
  }
  for (int p = 0; p < kPartitions; p++) {
    Part& part = parts_[p];
    if (part.empty()) continue;
    std::string path = owner_->SpillPath(p);
    std::lock_guard<std::mutex> lock(*owner_->spill_mu_[p]);
    FILE* f = std::fopen(path.c_str(), "ab");
    if (f == nullptr) return OsError(codes::kIoError, "cannot open spill file", path, errno);
    // The words as they are: int keys, or records of (low, high) fingerprint halves.
    size_t written = 0;
    bool ok = true;
    part.ForEachBlock([&](const uint64_t* words, size_t n) {
      ok = ok && std::fwrite(words, 8, n, f) == n;
      written += n * 8;
    });
    if (std::fclose(f) != 0) ok = false;
    if (!ok) return OsError(codes::kIoError, "cannot write spill file", path, errno);
    owner_->spilled_bytes_.fetch_add(static_cast<int64_t>(written));
  }
  // Every part starts over, empty ones included (their first block is in the arena too), and
  // the arena's regions, already faulted in, serve again.
  for (Part& part : parts_) part = Part();
  arena_.Reset();
  owner_->used_.fetch_sub(bytes_, std::memory_order_relaxed);
  bytes_ = 0;
  reported_ = 0;
  return Status::Ok();
}

DistinctCounter::DistinctCounter(bool string_keys, int64_t budget_bytes, std::string spill_dir)
    : string_keys_(string_keys), budget_(budget_bytes), spill_dir_(std::move(spill_dir)) {
  for (int p = 0; p < kPartitions; p++) spill_mu_.push_back(std::make_unique<std::mutex>());
}

DistinctCounter::~DistinctCounter() {
  if (own_spill_dir_)
    (void)RemoveAll(spill_dir_);
  else if (!spill_dir_.empty()) {
    for (int p = 0; p < kPartitions; p++) ::unlink(SpillPath(p).c_str());
  }
}

KeyCollector* DistinctCounter::NewCollector() {
  std::lock_guard<std::mutex> lock(mu_);
  collectors_.push_back(std::unique_ptr<KeyCollector>(new KeyCollector(this)));
  return collectors_.back().get();
}

std::string DistinctCounter::SpillPath(int p) const {
  return spill_dir_ + "/keys-" + std::to_string(p) + ".spill";
}

Result<int64_t> DistinctCounter::CountPartition(int p) {
  std::string spilled;
  if (!spill_dir_.empty() && PathExists(SpillPath(p))) {
    auto data = ReadFile(SpillPath(p));
    if (!data.ok()) return data.error();
    spilled = std::move(*data);
  }
  int64_t distinct = 0;
  if (!string_keys_) {
    std::vector<uint64_t> all;
    size_t words = spilled.size() / 8;
    for (auto& c : collectors_)
      c->parts_[p].ForEachBlock([&](const uint64_t*, size_t n) { words += n; });
    all.resize(words);
    uint64_t* out = all.data();
    if (spilled.size() >= 8) {
      std::memcpy(out, spilled.data(), spilled.size() / 8 * 8);
      out += spilled.size() / 8;
    }
    for (auto& c : collectors_) {
      c->parts_[p].ForEachBlock([&](const uint64_t* w, size_t n) {
        std::memcpy(out, w, n * 8);
        out += n;
      });
    }
    std::vector<uint64_t> repeated;
    distinct = CountDistinct(all, &repeated);
    return distinct;
  }
  // Fingerprints are (low, high) 64-bit halves. The low halves are counted alone; only those
  // that occur more than once (real duplicates, or rarely two keys sharing 64 bits) need their
  // high halves compared.
  auto for_each = [&](auto&& fn) {
    for (size_t off = 0; off + 16 <= spilled.size(); off += 16) {
      fn(Load64(spilled.data() + off), Load64(spilled.data() + off + 8));
    }
    for (auto& c : collectors_) {
      c->parts_[p].ForEachBlock([&](const uint64_t* w, size_t n) {
        for (size_t i = 0; i + 1 < n; i += 2) fn(w[i], w[i + 1]);
      });
    }
  };
  std::vector<uint64_t> lows;
  size_t keys = spilled.size() / 16;
  for (auto& c : collectors_)
    c->parts_[p].ForEachBlock([&](const uint64_t*, size_t n) { keys += n / 2; });
  lows.reserve(keys);
  for_each([&](uint64_t lo, uint64_t) { lows.push_back(lo); });
  std::vector<uint64_t> repeated;  // low halves seen more than once, sorted
  distinct = CountDistinct(lows, &repeated);
  if (repeated.empty()) return distinct;
  std::vector<uint64_t>().swap(lows);
  std::vector<std::pair<uint64_t, uint64_t>> ties;
  for_each([&](uint64_t lo, uint64_t hi) {
    if (std::binary_search(repeated.begin(), repeated.end(), lo)) ties.emplace_back(lo, hi);
  });
  std::sort(ties.begin(), ties.end());
  // Each repeated low half was counted once above; add the extra distinct keys that share it.
  for (size_t i = 0; i < ties.size();) {
    size_t j = i + 1;
    int64_t keys = 1;
    while (j < ties.size() && ties[j].first == ties[i].first) {
      if (ties[j].second != ties[j - 1].second) keys++;
      j++;
    }
    distinct += keys - 1;
    i = j;
  }
  return distinct;
}

Result<int64_t> DistinctCounter::Count(int threads) {
  for (auto& c : collectors_) {
    if (!c->spill_status_.ok()) return c->spill_status_.error();
  }
  threads = std::max(1, std::min(threads, kPartitions));
  std::vector<int64_t> counts(kPartitions, 0);
  std::vector<Status> errors(kPartitions);
  std::atomic<int> next{0};
  auto work = [&] {
    for (int p; (p = next.fetch_add(1)) < kPartitions;) {
      auto r = CountPartition(p);
      if (r.ok())
        counts[p] = *r;
      else
        errors[p] = r.status();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; t++) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  int64_t total = 0;
  for (int p = 0; p < kPartitions; p++) {
    if (!errors[p].ok()) return errors[p].error();
    total += counts[p];
  }
  return total;
}

}  // namespace rsl::data
