# libspelt_arrow (target spelt::arrow; cpp/arrow): Arrow C++'s filesystems (S3, GCS, Azure,
# HDFS) as spelt::FileSystems for C++ programs (spelt/arrow_file_system.h), linked against the
# libarrow (and libarrow_s3) of the pyarrow wheel importable by the build's Python
# (cmake/spelt-pyarrow.cmake). SPELT_ARROW_FILE_SYSTEMS: AUTO builds it where that pyarrow is
# found (else says so and skips it), ON requires it, OFF skips it.
#
# Two halves: the Arrow-facing sources (the remote files of cpp/parquet_native, shared with
# spelt._parquet_native, and cpp/arrow/arrow_uri_files.cc) are compiled with the wheel's
# _GLIBCXX_USE_CXX11_ABI; cpp/arrow/arrow_file_system.cc with libspelt's. They meet through
# C functions (cpp/arrow/arrow_uri_files.h) and spelt/native_files_abi.h's table.
if(SPELT_ARROW_FILE_SYSTEMS STREQUAL "OFF")
  return()
endif()
if(NOT Python_EXECUTABLE)
  find_package(Python 3.10 COMPONENTS Interpreter QUIET)
endif()
include(${CMAKE_CURRENT_LIST_DIR}/spelt-pyarrow.cmake)
if(NOT SPELT_PYARROW_FOUND)
  string(CONCAT SPELT_ARROW_MISSING "libspelt_arrow needs Arrow C++: pyarrow importable by the"
               " Python interpreter on PATH or in Python_EXECUTABLE (${Python_EXECUTABLE})")
  if(SPELT_ARROW_FILE_SYSTEMS STREQUAL "ON")
    message(FATAL_ERROR "${SPELT_ARROW_MISSING}")
  endif()
  message(STATUS "${SPELT_ARROW_MISSING}: skipped")
  return()
endif()
message(STATUS "libspelt_arrow: building against ${SPELT_LIBARROW} ${SPELT_LIBARROW_S3}")

add_library(spelt_arrow_abi OBJECT ${CMAKE_CURRENT_SOURCE_DIR}/cpp/arrow/arrow_uri_files.cc
            ${CMAKE_CURRENT_SOURCE_DIR}/cpp/parquet_native/arrow_files.cc
            ${CMAKE_CURRENT_SOURCE_DIR}/cpp/parquet_native/request_pool.cc)
target_include_directories(spelt_arrow_abi PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cpp/include
                           ${CMAKE_CURRENT_SOURCE_DIR}/cpp/parquet_native)
spelt_compile_with_pyarrow(spelt_arrow_abi)

add_library(spelt_arrow STATIC ${CMAKE_CURRENT_SOURCE_DIR}/cpp/arrow/arrow_file_system.cc
            $<TARGET_OBJECTS:spelt_arrow_abi>)
add_library(spelt::arrow ALIAS spelt_arrow)
target_include_directories(spelt_arrow PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cpp/arrow)
target_compile_options(spelt_arrow PRIVATE -Wall -Wextra)
# Programs find the wheel's libraries by the build tree's RPATH (CMake adds their folder).
target_link_libraries(spelt_arrow PUBLIC spelt PRIVATE ${SPELT_LIBARROW} ${SPELT_LIBARROW_S3})
