// ArrayRecord in spelt._core: native sources (read without the GIL), the writer and file facts.
#ifndef SPELT_PYTHON_PY_ARRAY_RECORD_H_
#define SPELT_PYTHON_PY_ARRAY_RECORD_H_

#include <nanobind/nanobind.h>

namespace spelt::python {

// Adds NativeSource, ArrayRecordSource, ArrayRecordWriter and array_record_info to `m`.
void RegisterArrayRecord(nanobind::module_& m);

}  // namespace spelt::python

#endif  // SPELT_PYTHON_PY_ARRAY_RECORD_H_
