# spelt._parquet_native (cpp/parquet_native): an optional extension module linked against the
# libarrow / libparquet (and libarrow_s3) of the pyarrow wheel importable by the build's Python:
# Parquet row groups decoded natively, and the native remote files (Arrow C++'s filesystems
# read and written without the GIL, docs/remote.md). Skipped, with a
# message, when pyarrow is not importable (for example a wheel built in an isolated
# environment): spelt then reads Parquet through pyarrow's Python API only.
execute_process(
  COMMAND "${Python_EXECUTABLE}" -c [=[
import glob, os, pyarrow
lib_dir = pyarrow.get_library_dirs()[0]
libs = [sorted(glob.glob(os.path.join(lib_dir, f"lib{name}.so.*")), key=len)[0]
        for name in ("parquet", "arrow")]
with open(libs[0], "rb") as f:
    cxx11_abi = b"__cxx11" in f.read()
s3 = sorted(glob.glob(os.path.join(lib_dir, "libarrow_s3.so.*")), key=len)[:1] or [""]
print(pyarrow.get_include(), lib_dir, *libs, int(cxx11_abi), *s3, sep=";", end="")
]=]
  RESULT_VARIABLE SPELT_PYARROW_RESULT
  OUTPUT_VARIABLE SPELT_PYARROW
  ERROR_QUIET)
if(NOT SPELT_PYARROW_RESULT EQUAL 0)
  message(STATUS "spelt._parquet_native skipped: pyarrow is not importable by ${Python_EXECUTABLE}")
  return()
endif()
list(GET SPELT_PYARROW 0 SPELT_PYARROW_INCLUDE)
list(GET SPELT_PYARROW 1 SPELT_PYARROW_LIB_DIR)
list(GET SPELT_PYARROW 2 SPELT_LIBPARQUET)
list(GET SPELT_PYARROW 3 SPELT_LIBARROW)
list(GET SPELT_PYARROW 4 SPELT_PYARROW_CXX11_ABI)
# libarrow_s3 (Arrow 16+ builds S3 apart): the native remote files make S3 clients with more
# connections through it (cpp/parquet_native/arrow_files.h); without it they use the given one.
list(GET SPELT_PYARROW 5 SPELT_LIBARROW_S3)
message(STATUS "spelt._parquet_native: building against ${SPELT_LIBPARQUET} ${SPELT_LIBARROW_S3}")

file(GLOB SPELT_PARQUET_NATIVE_SOURCES CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_SOURCE_DIR}/cpp/parquet_native/*.cc)
# The module does not link libspelt: it compiles in the two sources it shares with it, the GIL
# helper and the buffer pool (so it has its own pool instance, cpp/src/base/buffer_pool.h).
nanobind_add_module(_parquet_native NB_STATIC NOMINSIZE ${SPELT_PARQUET_NATIVE_SOURCES}
                    ${CMAKE_CURRENT_SOURCE_DIR}/cpp/python/gil.cc
                    ${CMAKE_CURRENT_SOURCE_DIR}/cpp/src/base/buffer_pool.cc)
target_include_directories(_parquet_native PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cpp/python
                           ${CMAKE_CURRENT_SOURCE_DIR}/cpp/src)
target_include_directories(_parquet_native SYSTEM PRIVATE ${SPELT_PYARROW_INCLUDE})
if(SPELT_LIBARROW_S3)
  set(SPELT_ARROW_S3 1)
else()
  set(SPELT_ARROW_S3 0)
endif()
target_compile_definitions(_parquet_native PRIVATE
                           _GLIBCXX_USE_CXX11_ABI=${SPELT_PYARROW_CXX11_ABI}
                           SPELT_ARROW_S3=${SPELT_ARROW_S3})
target_compile_options(_parquet_native PRIVATE -Wall -Wextra)
target_link_libraries(_parquet_native PRIVATE ${SPELT_LIBPARQUET} ${SPELT_LIBARROW}
                      ${SPELT_LIBARROW_S3})
spelt_make_portable(_parquet_native)
# Installed beside pyarrow in site-packages (spelt/ next to pyarrow/); the build tree uses
# the wheel's directory.
set_target_properties(_parquet_native PROPERTIES
                      BUILD_RPATH "${SPELT_PYARROW_LIB_DIR}"
                      INSTALL_RPATH "$ORIGIN/../pyarrow")
install(TARGETS _parquet_native LIBRARY DESTINATION spelt)
