// The process's pool of remote requests (native_files_abi.h's reads): its size is the in-flight
// limit, spelt.config.remote_max_in_flight, so that at most that many requests of this process
// wait on stores at once, whichever files and threads they serve. The same limit as the Python
// path's (spelt._remote_reads), counted separately.
//
// Thread-safety: all functions may be called from any thread. A forked child starts with an
// empty pool (the parent's threads do not exist there).
#ifndef SPELT_PARQUET_NATIVE_REQUEST_POOL_H_
#define SPELT_PARQUET_NATIVE_REQUEST_POOL_H_

#include <functional>
#include <vector>

namespace spelt::parquet_native {

// The limit before SetRequestLimit is called: spelt.config.remote_max_in_flight's default
// (docs/remote.md, "Choosing the in-flight limit").
inline constexpr int kDefaultMaxInFlight = 256;

// Sets the number of pool threads (>= 1); effective for the requests run after the call.
void SetRequestLimit(int limit);

// Runs every task on the pool and returns when all have returned. Tasks must not throw.
// REQUIRES: not called from a pool thread.
void RunRequests(std::vector<std::function<void()>>& tasks);

}  // namespace spelt::parquet_native

#endif  // SPELT_PARQUET_NATIVE_REQUEST_POOL_H_
