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

}  // namespace

uint64_t HashBytes(std::string_view bytes) {
  // 8 bytes at a time with a strong 64-bit mix; tail bytes folded with the length.
  const char* p = bytes.data();
  size_t n = bytes.size();
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0xff51afd7ed558ccdull);
  while (n >= 8) {
    h = MixInt(h ^ Load64(p)) + 0x9e3779b97f4a7c15ull;
    p += 8;
    n -= 8;
  }
  uint64_t tail = 0;
  if (n > 0) std::memcpy(&tail, p, n);
  return MixInt(h ^ tail ^ (static_cast<uint64_t>(n) << 56));
}

void KeyCollector::AddString(std::string_view key) {
  uint64_t h = HashBytes(key);
  Part& part = parts_[PartitionOf(h)];
  part.hashes.push_back(h);
  part.offsets.push_back(part.arena.size());
  uint32_t len = static_cast<uint32_t>(key.size());
  part.arena.append(reinterpret_cast<const char*>(&len), 4);
  part.arena.append(key.data(), key.size());
  keys_++;
  bytes_ += 20 + static_cast<int64_t>(key.size());
  if (++since_check_ >= kBudgetCheckEvery) MaybeSpill();
}

void KeyCollector::AddInt(int64_t key) {
  uint64_t v = static_cast<uint64_t>(key);
  parts_[PartitionOf(MixInt(v))].hashes.push_back(v);
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
    if (part.hashes.empty()) continue;
    std::string path = owner_->SpillPath(p);
    std::lock_guard<std::mutex> lock(*owner_->spill_mu_[p]);
    FILE* f = std::fopen(path.c_str(), "ab");
    if (f == nullptr) return OsError(codes::kIoError, "cannot open spill file", path, errno);
    size_t written = 0;
    bool ok = true;
    if (owner_->string_keys_) {
      for (size_t i = 0; i < part.hashes.size() && ok; i++) {
        const char* rec = part.arena.data() + part.offsets[i];
        uint32_t len;
        std::memcpy(&len, rec, 4);
        ok = std::fwrite(&part.hashes[i], 8, 1, f) == 1 && std::fwrite(rec, 4 + len, 1, f) == 1;
        written += 12 + len;
      }
    } else {
      ok = std::fwrite(part.hashes.data(), 8, part.hashes.size(), f) == part.hashes.size();
      written = part.hashes.size() * 8;
    }
    if (std::fclose(f) != 0) ok = false;
    if (!ok) return OsError(codes::kIoError, "cannot write spill file", path, errno);
    owner_->spilled_bytes_.fetch_add(static_cast<int64_t>(written));
    part = Part();
  }
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
    all.resize(spilled.size() / 8);
    if (!all.empty()) std::memcpy(all.data(), spilled.data(), all.size() * 8);
    for (auto& c : collectors_) {
      const auto& h = c->parts_[p].hashes;
      all.insert(all.end(), h.begin(), h.end());
    }
    std::sort(all.begin(), all.end());
    for (size_t i = 0; i < all.size(); i++) {
      if (i == 0 || all[i] != all[i - 1]) distinct++;
    }
    return distinct;
  }
  // Entries are (hash, pointer to [u32 len][bytes]). Sorting the 8-byte hashes alone is about
  // twice as fast as sorting (hash, pointer) pairs; only hashes that occur more than once (rare:
  // real duplicates or 64-bit collisions) need their keys compared.
  auto for_each = [&](auto&& fn) {
    for (size_t off = 0; off + 12 <= spilled.size();) {
      uint32_t len;
      std::memcpy(&len, spilled.data() + off + 8, 4);
      fn(Load64(spilled.data() + off), spilled.data() + off + 8);
      off += 12 + len;
    }
    for (auto& c : collectors_) {
      const auto& part = c->parts_[p];
      for (size_t i = 0; i < part.hashes.size(); i++) {
        fn(part.hashes[i], part.arena.data() + part.offsets[i]);
      }
    }
  };
  std::vector<uint64_t> hashes;
  for_each([&](uint64_t h, const char*) { hashes.push_back(h); });
  std::sort(hashes.begin(), hashes.end());
  std::vector<uint64_t> repeated;  // hashes seen more than once, sorted
  for (size_t i = 0; i < hashes.size();) {
    size_t j = i + 1;
    while (j < hashes.size() && hashes[j] == hashes[i]) j++;
    distinct++;
    if (j - i > 1) repeated.push_back(hashes[i]);
    i = j;
  }
  if (repeated.empty()) return distinct;
  std::vector<uint64_t>().swap(hashes);
  std::vector<std::pair<uint64_t, std::string_view>> ties;
  for_each([&](uint64_t h, const char* rec) {
    if (!std::binary_search(repeated.begin(), repeated.end(), h)) return;
    uint32_t len;
    std::memcpy(&len, rec, 4);
    ties.emplace_back(h, std::string_view(rec + 4, len));
  });
  std::sort(ties.begin(), ties.end());
  // Each repeated hash was counted once above; add the extra distinct keys that share it.
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
