# Makes an extension module self-contained and loadable on glibc 2.28 or newer (the
# manylinux_2_28 policy, PEP 600: RHEL 8, Ubuntu 20.04), so that `make wheel` (docs/install.md)
# gives a wheel that needs no system library beyond glibc:
# - libstdc++ is linked statically (the system one of a manylinux_2_28 host is older than the
#   g++ that builds Spelt); libgcc_s stays shared (its unwinder needs glibc 2.35's
#   _dl_find_object when linked statically, and its symbols are within the policy);
# - the codecs are linked from their static archives (SPELT_STATIC_CODECS,
#   cmake/spelt-dependencies.cmake); ISA-L, which has none on Debian, is grafted into the wheel
#   by auditwheel;
# - the module exports PyInit_<name> only (cmake/extension.map), so the static copies stay
#   private and never clash with another module's zstd or libstdc++;
# - references to the glibc symbols that got a newer version after 2.28 go to the older
#   version through the pins of cpp/portable/glibc_2_28.cc (-Wl,--wrap=<symbol>).
set(SPELT_GLIBC_PINNED_SYMBOLS
    pthread_create pthread_join pthread_once pthread_mutex_trylock pthread_detach log2 exp log fstat
    __libc_single_threaded)

# The pins are for x86_64 builds on a glibc newer than 2.28 (this Debian 12 machine); a build
# on glibc 2.28 itself (a manylinux_2_28 container, as cibuildwheel uses) needs none.
execute_process(COMMAND getconf GNU_LIBC_VERSION OUTPUT_VARIABLE SPELT_GLIBC_VERSION
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
string(REGEX MATCH "[0-9]+\\.[0-9]+" SPELT_GLIBC_VERSION "${SPELT_GLIBC_VERSION}")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64" AND SPELT_GLIBC_VERSION VERSION_GREATER 2.28)
  set(SPELT_GLIBC_PINS ON)
else()
  set(SPELT_GLIBC_PINS OFF)
endif()

function(spelt_make_portable target)
  set(wraps "")
  if(SPELT_GLIBC_PINS)
    target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/cpp/portable/glibc_2_28.cc)
    foreach(symbol IN LISTS SPELT_GLIBC_PINNED_SYMBOLS)
      list(APPEND wraps "LINKER:--wrap=${symbol}")
    endforeach()
  endif()
  target_link_options(${target} PRIVATE -static-libstdc++
                      "LINKER:--version-script=${PROJECT_SOURCE_DIR}/cmake/extension.map"
                      ${wraps})
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS
               ${PROJECT_SOURCE_DIR}/cmake/extension.map)
endfunction()
