#include "spelt/blocking_wait.h"

#include <atomic>

namespace spelt {
namespace {

std::atomic<BlockingWaitHook> g_hook{nullptr};

}  // namespace

void BlockingWait(const std::function<void()>& wait) {
  if (BlockingWaitHook hook = g_hook.load(std::memory_order_acquire)) {
    hook(wait);
  } else {
    wait();
  }
}

void SetBlockingWaitHook(BlockingWaitHook hook) { g_hook.store(hook, std::memory_order_release); }

}  // namespace spelt
