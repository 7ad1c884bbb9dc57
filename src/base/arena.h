// An arena of 2 MiB-aligned regions that the kernel is asked to back with transparent huge
// pages (madvise MADV_HUGEPAGE). For large, write-once buffers filled in one pass, such as the
// keys of a distinct count: touching fresh 4 KiB pages costs a page fault each, and on a
// virtual machine a fault is several microseconds (measured here: 160 MiB first touched in
// 0.46 s with 4 KiB pages, 0.01-0.21 s with huge pages; bench/README.md, "Parquet profile,
// session 33"). Where the kernel has no huge pages the advice is ignored and the arena works
// as a plain one. Not thread-safe: one arena per thread.
#pragma once

#include <cstddef>
#include <vector>

namespace rsl {

class HugePageArena {
 public:
  //! Each region is `region_bytes`, rounded up to a multiple of 2 MiB.
  explicit HugePageArena(size_t region_bytes = size_t{4} << 20);
  ~HugePageArena();
  HugePageArena(const HugePageArena&) = delete;
  HugePageArena& operator=(const HugePageArena&) = delete;

  //! `bytes` of uninitialized memory, 64-byte aligned, valid until Reset() or destruction.
  //! An allocation larger than a region gets a region of its own. Throws std::bad_alloc when
  //! the system has no memory, as operator new does.
  void* Allocate(size_t bytes);
  //! Forgets every allocation; keeps the regions (already faulted in) for the next ones.
  void Reset();
  //! Bytes mapped (not necessarily resident).
  size_t mapped_bytes() const;

 private:
  struct Region {
    char* base;
    size_t bytes;
  };
  Region Map(size_t bytes);

  size_t region_bytes_;
  std::vector<Region> regions_;
  size_t current_ = 0;  //!< region allocations come from; regions_.size() when none
  size_t used_ = 0;     //!< bytes used of regions_[current_]
};

}  // namespace rsl
