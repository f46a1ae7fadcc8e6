# spelt._parquet_native (cpp/parquet_native): an optional extension module linked against the
# libarrow / libparquet (and libarrow_s3) of the pyarrow wheel importable by the build's Python:
# Parquet row groups decoded natively, and the native remote files (Arrow C++'s filesystems
# read and written without the GIL, docs/remote.md). Skipped, with a
# message, when pyarrow is not importable (for example a wheel built in an isolated
# environment): spelt then reads Parquet through pyarrow's Python API only.
include(${CMAKE_CURRENT_LIST_DIR}/spelt-pyarrow.cmake)
if(NOT SPELT_PYARROW_FOUND)
  message(STATUS "spelt._parquet_native skipped: pyarrow is not importable by ${Python_EXECUTABLE}")
  return()
endif()
# libarrow_s3: the native remote files make S3 clients with more connections through it
# (cpp/parquet_native/arrow_files.h); without it they use the given one.
message(STATUS "spelt._parquet_native: building against ${SPELT_LIBPARQUET} ${SPELT_LIBARROW_S3}")

file(GLOB SPELT_PARQUET_NATIVE_SOURCES CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_SOURCE_DIR}/cpp/parquet_native/*.cc)
# The module does not link libspelt: it compiles in the two sources it shares with it, the GIL
# helper and the buffer pool (so it has its own pool instance, cpp/src/base/buffer_pool.h).
nanobind_add_module(_parquet_native NB_STATIC NOMINSIZE ${SPELT_PARQUET_NATIVE_SOURCES}
                    ${CMAKE_CURRENT_SOURCE_DIR}/cpp/python/gil.cc
                    ${CMAKE_CURRENT_SOURCE_DIR}/cpp/src/base/buffer_pool.cc)
target_include_directories(_parquet_native PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cpp/python
                           ${CMAKE_CURRENT_SOURCE_DIR}/cpp/src
                           ${CMAKE_CURRENT_SOURCE_DIR}/cpp/include)
spelt_compile_with_pyarrow(_parquet_native)
target_link_libraries(_parquet_native PRIVATE ${SPELT_LIBPARQUET} ${SPELT_LIBARROW}
                      ${SPELT_LIBARROW_S3})
spelt_make_portable(_parquet_native)
# Installed beside pyarrow in site-packages (spelt/ next to pyarrow/); the build tree uses
# the wheel's directory.
set_target_properties(_parquet_native PROPERTIES
                      BUILD_RPATH "${SPELT_PYARROW_LIB_DIR}"
                      INSTALL_RPATH "$ORIGIN/../pyarrow")
install(TARGETS _parquet_native LIBRARY DESTINATION spelt)
