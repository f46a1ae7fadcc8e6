// The one place where engine exceptions become Python exceptions (see bindings.h).
// nanobind already maps std::invalid_argument to ValueError, std::out_of_range to IndexError
// and other std::exception to RuntimeError; Python exceptions raised in callbacks cross the
// engine unchanged as nb::python_error.
#include <system_error>

#include <nanobind/nanobind.h>

#include "bindings.h"
#include "spelt/errors.h"
#include "spelt/sampler.h"

namespace spelt::python {

void RegisterErrors(nb::module_& m) {
  // File-format errors: their messages name the file and the byte offset.
  static nb::exception<CorruptFileError> corrupt(m, "CorruptFileError", PyExc_ValueError);
  static nb::exception<UnsupportedError> unsupported(m, "UnsupportedError",
                                                     PyExc_NotImplementedError);
  // Undecodable image bytes (spelt.vision's native path): "corrupt JPEG image (N bytes): ...".
  static nb::exception<CorruptImageError> corrupt_image(m, "CorruptImageError", PyExc_ValueError);
  // A sampler reading a shard that owns no records: Grain raises ZeroDivisionError there.
  static nb::exception<EmptyShardError> empty_shard(m, "EmptyShardError", PyExc_ZeroDivisionError);
  // get/set_next_index on an iterator that cannot tell its next index (Grain raises
  // NotImplementedError there).
  static nb::exception<NextIndexUnsupported> next_index(m, "NextIndexUnsupported",
                                                        PyExc_NotImplementedError);
  // Failures of the operating system (open, read, write) become OSError with their errno.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const std::system_error& e) {
      nb::object args = nb::make_tuple(e.code().value(), e.what());
      PyErr_SetObject(PyExc_OSError, args.ptr());
    }
  });
}

}  // namespace spelt::python
