// Runs one piece of an RPC handler. Protobuf, gRPC and the standard library may throw (allocation
// above all); a throw must not take the server down, so it becomes a status here:
// std::bad_alloc RESOURCE_EXHAUSTED, any other exception INTERNAL, both naming the RPC.
#ifndef MATRIXD_SERVER_GUARDED_H_
#define MATRIXD_SERVER_GUARDED_H_

#include <exception>
#include <new>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace matrixd::server {

// `body` returns an absl::Status; Guarded returns it, or the status of what it threw.
template <typename Body>
absl::Status Guarded(const char* rpc, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(rpc, ": out of memory"));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(rpc, ": ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat(rpc, ": unknown exception"));
  }
}

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_GUARDED_H_
