// Taking and dropping the GIL so that no thread is ended inside Spelt's C++ frames when Python
// exits.
//
// When Python exits, a thread that takes the GIL after finalization began is ended by CPython
// with pthread_exit, whose forced unwinding through C++ frames aborts the process ("terminate
// called without an active exception", or a fatal PyGILState_Release error). That happened to
// any daemon thread inside `next()` at exit. So the module registers an atexit hook
// (MarkExiting) that runs before finalization on the exiting thread: it marks the interpreter
// exiting, drops the GIL and waits (at most kExitWait) until no other thread runs Python
// called from Spelt's C++ code, then takes the GIL back. From then on a thread other than the
// exiting one never takes the GIL through these guards again:
// - GilRelease's destructor parks it (it sleeps until the process ends, as CPython would have
//   ended it);
// - GilAcquire parks it if it holds the GIL (dropping it first), and otherwise throws
//   InterpreterExiting (engine threads: their task fails and nobody waits for it);
// - TryGil skips the work (reference drops: the dying interpreter frees the object).
//
// Use these instead of nb::gil_scoped_release / nb::gil_scoped_acquire everywhere in the
// bindings. Thread-safe.
#ifndef SPELT_CPP_PYTHON_GIL_H_
#define SPELT_CPP_PYTHON_GIL_H_

#include <nanobind/nanobind.h>

#include <stdexcept>

namespace spelt::python {

namespace nb = nanobind;

// Raised by GilAcquire on a thread that needs Python after the interpreter began exiting.
class InterpreterExiting : public std::runtime_error {
 public:
  InterpreterExiting() : std::runtime_error("the Python interpreter is exiting") {}
};

// Releases the GIL for its lifetime. REQUIRES: the GIL held. After the interpreter began
// exiting, the destructor parks the thread for good unless it is the exiting thread.
class GilRelease {
 public:
  GilRelease();
  ~GilRelease();
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* state_;
  int depth_;  // GilAcquire scopes open on this thread, counted out while the GIL is dropped
};

// Holds the GIL for its lifetime (re-entrant, from any thread). Once the interpreter began
// exiting, on a thread other than the exiting one: parks the thread if it holds the GIL, else
// throws InterpreterExiting.
class GilAcquire {
 public:
  GilAcquire();
  ~GilAcquire();
  GilAcquire(const GilAcquire&) = delete;
  GilAcquire& operator=(const GilAcquire&) = delete;

 private:
  PyGILState_STATE state_;
};

// Holds the GIL for its lifetime if it could be taken: held() is false, and nothing was
// taken, once the interpreter began exiting (on threads other than the exiting one) or after
// it finalized. For cleanup that may be skipped at exit (reference drops). Never throws.
class TryGil {
 public:
  TryGil() noexcept;
  ~TryGil();
  TryGil(const TryGil&) = delete;
  TryGil& operator=(const TryGil&) = delete;
  bool held() const { return held_; }

 private:
  bool held_ = false;
  PyGILState_STATE state_{};
};

// Whether this thread is inside a GilAcquire scope: running Python called from Spelt's C++
// code (a pipeline's callable, on an engine thread or on the consumer).
bool InEngineCallback();

// Registers the atexit hook described above (once, at import).
void RegisterExitHook();

}  // namespace spelt::python

#endif  // SPELT_CPP_PYTHON_GIL_H_
