// Implementation of gil.h.
#include "gil.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace spelt::python {
namespace {

// How long the exit hook waits for Python called from Spelt's C++ code to return.
constexpr auto kExitWait = std::chrono::seconds(2);

std::atomic<bool> exiting{false};
std::atomic<std::thread::id> exiting_thread{};
// Threads that hold or wait for the GIL inside a GilAcquire / TryGil scope (not counting those
// that dropped it again with GilRelease): the exit hook lets them finish first.
std::atomic<int> in_python{0};
// GilAcquire scopes open on this thread.
thread_local int depth = 0;

bool InterpreterAlive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

// Whether this thread may still take the GIL; if so, counts `n` scopes into in_python.
bool MayEnter(int n) {
  in_python.fetch_add(n);
  if (exiting.load() && exiting_thread.load() != std::this_thread::get_id()) {
    in_python.fetch_sub(n);
    return false;
  }
  return true;
}

[[noreturn]] void Park() {
  for (;;) pause();  // until the process ends
}

// The atexit hook: runs on the exiting thread with the GIL held, before finalization.
void MarkExiting() {
  exiting_thread.store(std::this_thread::get_id());
  exiting.store(true);
  const int own = depth;  // this thread's own scopes (none when called by atexit)
  if (in_python.load() == own) return;
  PyThreadState* state = PyEval_SaveThread();
  const auto deadline = std::chrono::steady_clock::now() + kExitWait;
  while (in_python.load() != own && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  PyEval_RestoreThread(state);
}

}  // namespace

GilRelease::GilRelease() : depth_(depth) {
  state_ = PyEval_SaveThread();
  in_python.fetch_sub(depth_);
}

GilRelease::~GilRelease() {
  // Counted once more while taking the GIL, so that the exit hook waits until it is taken.
  if (!MayEnter(depth_ + 1)) Park();
  PyEval_RestoreThread(state_);
  in_python.fetch_sub(1);
}

GilAcquire::GilAcquire() {
  if (!MayEnter(1)) {
    if (PyGILState_Check()) {
      PyEval_SaveThread();
      Park();
    }
    throw InterpreterExiting();
  }
  state_ = PyGILState_Ensure();
  ++depth;
}

GilAcquire::~GilAcquire() {
  --depth;
  PyGILState_Release(state_);
  in_python.fetch_sub(1);
}

TryGil::TryGil() noexcept {
  if (!InterpreterAlive() || !MayEnter(1)) return;  // the interpreter frees everything
  state_ = PyGILState_Ensure();
  held_ = true;
}

TryGil::~TryGil() {
  if (!held_) return;
  PyGILState_Release(state_);
  in_python.fetch_sub(1);
}

bool InEngineCallback() { return depth > 0; }

void RegisterExitHook() {
  nb::module_::import_("atexit").attr("register")(
      nb::cpp_function([] { MarkExiting(); }, nb::name("_mark_exiting")));
}

}  // namespace spelt::python
