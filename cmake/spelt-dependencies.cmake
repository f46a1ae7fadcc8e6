# libspelt's private dependencies as imported targets: PkgConfig::SPELT_ZSTD,
# PkgConfig::SPELT_BROTLI, PkgConfig::SPELT_SNAPPY, PkgConfig::SPELT_ZLIB,
# PkgConfig::SPELT_ISAL (Intel ISA-L: CRC32C for TFRecord; found with pkg-config) and
# spelt::highwayhash. Included by CMakeLists.txt to build libspelt, and by the installed
# spelt-config.cmake: libspelt is a static library, so programs that link it link these too.
# Sets SPELT_MISSING_DEPENDENCIES to the (Debian package) names of those not found; the includer
# decides how to fail.
find_package(PkgConfig QUIET)
set(SPELT_MISSING_DEPENDENCIES "")
if(NOT PkgConfig_FOUND)
  list(APPEND SPELT_MISSING_DEPENDENCIES pkg-config)
else()
  pkg_check_modules(SPELT_ZSTD QUIET IMPORTED_TARGET libzstd)
  pkg_check_modules(SPELT_BROTLI QUIET IMPORTED_TARGET libbrotlidec libbrotlienc)
  pkg_check_modules(SPELT_SNAPPY QUIET IMPORTED_TARGET snappy)
  pkg_check_modules(SPELT_ZLIB QUIET IMPORTED_TARGET zlib)
  pkg_check_modules(SPELT_ISAL QUIET IMPORTED_TARGET libisal)
  if(NOT SPELT_ZSTD_FOUND)
    list(APPEND SPELT_MISSING_DEPENDENCIES libzstd-dev)
  endif()
  if(NOT SPELT_BROTLI_FOUND)
    list(APPEND SPELT_MISSING_DEPENDENCIES libbrotli-dev)
  endif()
  if(NOT SPELT_SNAPPY_FOUND)
    list(APPEND SPELT_MISSING_DEPENDENCIES libsnappy-dev)
  endif()
  if(NOT SPELT_ZLIB_FOUND)
    list(APPEND SPELT_MISSING_DEPENDENCIES zlib1g-dev)
  endif()
  if(NOT SPELT_ISAL_FOUND)
    list(APPEND SPELT_MISSING_DEPENDENCIES libisal-dev)
  endif()
endif()

find_library(SPELT_HIGHWAYHASH_LIBRARY NAMES highwayhash)
find_path(SPELT_HIGHWAYHASH_INCLUDE_DIR highwayhash/c_bindings.h)
if(NOT SPELT_HIGHWAYHASH_LIBRARY OR NOT SPELT_HIGHWAYHASH_INCLUDE_DIR)
  list(APPEND SPELT_MISSING_DEPENDENCIES libhighwayhash-dev)
elseif(NOT TARGET spelt::highwayhash)
  add_library(spelt::highwayhash UNKNOWN IMPORTED)
  set_target_properties(spelt::highwayhash PROPERTIES
                        IMPORTED_LOCATION "${SPELT_HIGHWAYHASH_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${SPELT_HIGHWAYHASH_INCLUDE_DIR}")
endif()
