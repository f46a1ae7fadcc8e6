# libspelt's private dependencies as imported targets: PkgConfig::SPELT_ZSTD,
# PkgConfig::SPELT_BROTLI, PkgConfig::SPELT_SNAPPY, PkgConfig::SPELT_ZLIB,
# PkgConfig::SPELT_ISAL (Intel ISA-L: CRC32C for TFRecord; found with pkg-config),
# PkgConfig::SPELT_JPEG (libjpeg-turbo's libjpeg API, for spelt/vision.h), PkgConfig::SPELT_WEBP
# (libwebp, for spelt/vision.h too; PNG is decoded on zlib) and
# spelt::highwayhash. Included by CMakeLists.txt to build libspelt, and by the installed
# spelt-config.cmake: libspelt is a static library, so programs that link it link these too.
# With SPELT_STATIC_CODECS (set by CMakeLists.txt for the Python extension, see
# cmake/spelt-portable.cmake), each codec target links the codec's static archives where the
# system has them, so that the wheel needs no system codec.
# Sets SPELT_MISSING_DEPENDENCIES to the (Debian package) names of those not found; the includer
# decides how to fail.
find_package(PkgConfig QUIET)

# Makes `target` link lib<name>.a for each name (in link order) if every one of them exists;
# otherwise the target keeps its shared libraries.
function(spelt_link_static_archives target)
  set(archives "")
  foreach(name IN LISTS ARGN)
    find_library(SPELT_ARCHIVE_${name} NAMES lib${name}.a)
    if(NOT SPELT_ARCHIVE_${name})
      message(STATUS "${target}: no lib${name}.a, linking the shared library")
      return()
    endif()
    list(APPEND archives ${SPELT_ARCHIVE_${name}})
  endforeach()
  set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${archives}")
endfunction()
set(SPELT_MISSING_DEPENDENCIES "")
if(NOT PkgConfig_FOUND)
  list(APPEND SPELT_MISSING_DEPENDENCIES pkg-config)
else()
  pkg_check_modules(SPELT_ZSTD QUIET IMPORTED_TARGET libzstd)
  pkg_check_modules(SPELT_BROTLI QUIET IMPORTED_TARGET libbrotlidec libbrotlienc)
  pkg_check_modules(SPELT_SNAPPY QUIET IMPORTED_TARGET snappy)
  pkg_check_modules(SPELT_ZLIB QUIET IMPORTED_TARGET zlib)
  pkg_check_modules(SPELT_ISAL QUIET IMPORTED_TARGET libisal)
  pkg_check_modules(SPELT_JPEG QUIET IMPORTED_TARGET libjpeg)
  pkg_check_modules(SPELT_WEBP QUIET IMPORTED_TARGET libwebp)
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
  if(NOT SPELT_JPEG_FOUND)
    list(APPEND SPELT_MISSING_DEPENDENCIES libjpeg62-turbo-dev)
  endif()
  if(NOT SPELT_WEBP_FOUND)
    list(APPEND SPELT_MISSING_DEPENDENCIES libwebp-dev)
  endif()
endif()

if(SPELT_STATIC_CODECS)  # its own cache entry, so a build dir never keeps the other choice
  find_library(SPELT_HIGHWAYHASH_ARCHIVE NAMES libhighwayhash.a highwayhash)
  set(SPELT_HIGHWAYHASH_LIBRARY ${SPELT_HIGHWAYHASH_ARCHIVE})
else()
  find_library(SPELT_HIGHWAYHASH_LIBRARY NAMES highwayhash)
endif()
find_path(SPELT_HIGHWAYHASH_INCLUDE_DIR highwayhash/c_bindings.h)
if(NOT SPELT_HIGHWAYHASH_LIBRARY OR NOT SPELT_HIGHWAYHASH_INCLUDE_DIR)
  list(APPEND SPELT_MISSING_DEPENDENCIES libhighwayhash-dev)
elseif(NOT TARGET spelt::highwayhash)
  add_library(spelt::highwayhash UNKNOWN IMPORTED)
  set_target_properties(spelt::highwayhash PROPERTIES
                        IMPORTED_LOCATION "${SPELT_HIGHWAYHASH_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${SPELT_HIGHWAYHASH_INCLUDE_DIR}")
endif()

if(SPELT_STATIC_CODECS AND NOT SPELT_MISSING_DEPENDENCIES)
  spelt_link_static_archives(PkgConfig::SPELT_ZSTD zstd)
  spelt_link_static_archives(PkgConfig::SPELT_BROTLI brotlidec brotlienc brotlicommon)
  spelt_link_static_archives(PkgConfig::SPELT_SNAPPY snappy)
  spelt_link_static_archives(PkgConfig::SPELT_ZLIB z)
  spelt_link_static_archives(PkgConfig::SPELT_ISAL isal)
  spelt_link_static_archives(PkgConfig::SPELT_WEBP webp)
  # Not libjpeg: Debian's libjpeg.a is not position-independent, so the extension module links
  # libjpeg.so.62 and auditwheel grafts it into the wheel (as ISA-L's, see docs/install.md).
endif()
