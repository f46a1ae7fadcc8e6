// Pins of the glibc symbols whose default version is newer than GLIBC_2.28, so that an extension
// module linked on a newer glibc loads on glibc 2.28 (manylinux_2_28; cmake/spelt-portable.cmake
// links each module with -Wl,--wrap=<symbol> for every symbol below, which sends the module's
// references, including those of the static libstdc++ and codec archives, to __wrap_<symbol>).
// The list is what `objdump -T` showed of the modules (Debian 12, glibc 2.36, g++ 12); a symbol
// missing here makes `make wheel` fail in auditwheel, which names the policy it reached.
// x86_64 only (the versions named are x86_64's); a build on glibc 2.28 itself, as in a
// manylinux_2_28 container, needs no pins and cmake/spelt-portable.cmake adds none there.
// Sources: glibc's Versions files and NEWS (2.29 new exp/log/pow/log2 without SVID errors,
// 2.32 __libc_single_threaded, 2.33 stat functions as symbols, 2.34 libpthread merged into libc).
#include <sys/stat.h>

// __wrap_<name> jumps to <name>@<version>: a tail jump keeps every argument and the result as
// they are, whatever the signature.
#define SPELT_PIN(name, version)                                               \
  __asm__(".symver spelt_pinned_" #name ", " #name "@" version "\n"            \
          ".globl __wrap_" #name "\n"                                          \
          ".hidden __wrap_" #name "\n"                                         \
          ".type __wrap_" #name ", @function\n"                                \
          "__wrap_" #name ":\n"                                                \
          "  jmp spelt_pinned_" #name "@PLT\n"                                 \
          ".size __wrap_" #name ", . - __wrap_" #name "\n")

// libpthread's functions, in libc.so.6 with version GLIBC_2.34 since glibc 2.34; the
// GLIBC_2.2.5 versions are the same functions (in libpthread.so.0 before 2.34, which every
// CPython of that era loads).
SPELT_PIN(pthread_create, "GLIBC_2.2.5");
SPELT_PIN(pthread_join, "GLIBC_2.2.5");
SPELT_PIN(pthread_once, "GLIBC_2.2.5");
SPELT_PIN(pthread_mutex_trylock, "GLIBC_2.2.5");
SPELT_PIN(pthread_detach, "GLIBC_2.2.5");  // std::thread::detach (the native remote files)
// glibc 2.29 made log2 (and exp, log, pow) set errno per C99 instead of SVID; the result is
// the same.
SPELT_PIN(log2, "GLIBC_2.2.5");
SPELT_PIN(exp, "GLIBC_2.2.5");  // RandomResizedCrop's parameters (spelt/vision.h)
SPELT_PIN(log, "GLIBC_2.2.5");

extern "C" {

// Before 2.33 fstat was a static inline wrapper around __fxstat (still exported for old
// binaries); _STAT_VER is 1 on x86_64 and 0 on aarch64.
int __fxstat(int ver, int fd, struct stat* st);
__attribute__((visibility("hidden"))) int __wrap_fstat(int fd, struct stat* st) {
  return __fxstat(/*_STAT_VER_LINUX=*/1, fd, st);
}

// libstdc++ reads this flag (glibc 2.32) to skip atomic reference counting in a process that
// has one thread; 0 keeps the atomic path, which is always correct.
__attribute__((visibility("hidden"))) char __wrap___libc_single_threaded = 0;

}  // extern "C"
