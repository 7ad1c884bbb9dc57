#include "base/arena.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace rsl {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kAlign = 64;

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

HugePageArena::HugePageArena(size_t region_bytes)
    : region_bytes_(RoundUp(region_bytes == 0 ? kHugePage : region_bytes, kHugePage)) {}

HugePageArena::~HugePageArena() {
  for (const Region& r : regions_) ::munmap(r.base, r.bytes);
}

HugePageArena::Region HugePageArena::Map(size_t bytes) {
  // Map a huge page more than asked and trim both ends, so the region starts on a 2 MiB
  // boundary: only aligned 2 MiB spans can be huge pages.
  const size_t span = bytes + kHugePage;
  void* p = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  char* raw = static_cast<char*>(p);
  char* base = reinterpret_cast<char*>(RoundUp(reinterpret_cast<uintptr_t>(raw), kHugePage));
  if (base > raw) ::munmap(raw, static_cast<size_t>(base - raw));
  char* tail = base + bytes;
  if (tail < raw + span) ::munmap(tail, static_cast<size_t>(raw + span - tail));
  (void)::madvise(base, bytes, MADV_HUGEPAGE);  // advice: where unsupported, 4 KiB pages
  return {base, bytes};
}

void* HugePageArena::Allocate(size_t bytes) {
  bytes = RoundUp(bytes == 0 ? 1 : bytes, kAlign);
  if (bytes > region_bytes_) {
    // A region of its own, made the current one: allocations continue in what it has left,
    // and regions between (unused since a Reset) wait for the next Reset.
    regions_.push_back(Map(RoundUp(bytes, kHugePage)));
    current_ = regions_.size() - 1;
    used_ = bytes;
    return regions_.back().base;
  }
  while (current_ < regions_.size() && used_ + bytes > regions_[current_].bytes) {
    current_++;
    used_ = 0;
  }
  if (current_ == regions_.size()) regions_.push_back(Map(region_bytes_));
  void* p = regions_[current_].base + used_;
  used_ += bytes;
  return p;
}

size_t HugePageArena::mapped_bytes() const {
  size_t n = 0;
  for (const Region& r : regions_) n += r.bytes;
  return n;
}

void HugePageArena::Reset() {
  current_ = 0;
  used_ = 0;
}

}  // namespace rsl
