// The process's allocator: which one it is, and handing its free pages back to the system.
// seedctl is linked with gperftools' tcmalloc, the controller and the test builds are not
// (CMakeLists.txt, RSL_MALLOC); code that links base works with either.
#pragma once

namespace rsl {

//! "tcmalloc" where the binary allocates through gperftools' tcmalloc, else "glibc".
const char* MallocName();

//! Hands the allocator's free pages back to the system: tcmalloc's
//! MallocExtension_ReleaseFreeMemory, else glibc's malloc_trim. A long-running process that
//! allocates in bursts on many threads (the controller) otherwise keeps its high-water mark:
//! measured with glibc, 3,000 finished workloads left 168 MB resident of which 74 MB after a
//! trim. Cheap (a walk of the free lists); a no-op elsewhere.
void ReturnFreeMemory();

}  // namespace rsl
