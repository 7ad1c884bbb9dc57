#include "base/malloc.h"

#include <malloc.h>

// gperftools' C API (gperftools/malloc_extension_c.h), declared weak: the symbol is there only
// in a binary linked with tcmalloc (rsl_use_malloc in CMakeLists.txt); elsewhere its address
// is null.
extern "C" void MallocExtension_ReleaseFreeMemory(void) __attribute__((weak));

namespace rsl {

const char* MallocName() {
  return &MallocExtension_ReleaseFreeMemory != nullptr ? "tcmalloc" : "glibc";
}

void ReturnFreeMemory() {
  if (&MallocExtension_ReleaseFreeMemory != nullptr) {
    MallocExtension_ReleaseFreeMemory();
    return;
  }
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

}  // namespace rsl
