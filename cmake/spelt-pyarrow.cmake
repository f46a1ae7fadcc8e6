# The Arrow C++ of the pyarrow wheel importable by ${Python_EXECUTABLE}: its headers, libarrow,
# libparquet and libarrow_s3 (Arrow 16+ builds S3 apart; "" where absent), and the
# _GLIBCXX_USE_CXX11_ABI its libraries were built with, which the code that links them must be
# compiled with (code of another ABI talks to it through spelt/native_files_abi.h). Sets
# SPELT_PYARROW_FOUND (FALSE when pyarrow is not importable), SPELT_PYARROW_INCLUDE,
# SPELT_PYARROW_LIB_DIR, SPELT_LIBPARQUET, SPELT_LIBARROW, SPELT_LIBARROW_S3,
# SPELT_PYARROW_CXX11_ABI and SPELT_ARROW_S3 (1 with libarrow_s3, else 0). Users:
# cmake/spelt-parquet-native.cmake and cmake/spelt-arrow-file-systems.cmake.
include_guard(GLOBAL)
# Compiles `target` against the wheel's Arrow headers, with the wheel's C++ ABI.
function(spelt_compile_with_pyarrow target)
  target_include_directories(${target} SYSTEM PRIVATE ${SPELT_PYARROW_INCLUDE})
  target_compile_definitions(${target} PRIVATE _GLIBCXX_USE_CXX11_ABI=${SPELT_PYARROW_CXX11_ABI}
                             SPELT_ARROW_S3=${SPELT_ARROW_S3})
  target_compile_options(${target} PRIVATE -Wall -Wextra)
endfunction()

set(SPELT_PYARROW_FOUND FALSE)
if(NOT Python_EXECUTABLE)
  return()
endif()
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
  return()
endif()
set(SPELT_PYARROW_FOUND TRUE)
list(GET SPELT_PYARROW 0 SPELT_PYARROW_INCLUDE)
list(GET SPELT_PYARROW 1 SPELT_PYARROW_LIB_DIR)
list(GET SPELT_PYARROW 2 SPELT_LIBPARQUET)
list(GET SPELT_PYARROW 3 SPELT_LIBARROW)
list(GET SPELT_PYARROW 4 SPELT_PYARROW_CXX11_ABI)
list(GET SPELT_PYARROW 5 SPELT_LIBARROW_S3)
if(SPELT_LIBARROW_S3)
  set(SPELT_ARROW_S3 1)
else()
  set(SPELT_ARROW_S3 0)
endif()

