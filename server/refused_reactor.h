// A callback-API reactor (ServerUnaryReactor, ServerReadReactor<T>, ServerWriteReactor<T>, ...)
// that only finishes its call with an error: what a handler returns when it refuses a call before
// any work. Owns itself; gRPC's OnDone deletes it.
#ifndef MATRIXD_SERVER_REFUSED_REACTOR_H_
#define MATRIXD_SERVER_REFUSED_REACTOR_H_

#include "absl/status/status.h"
#include "server/status_conversion.h"

namespace matrixd::server {

template <typename Base>
class RefusedReactor final : public Base {
 public:
  // REQUIRES: !status.ok().
  explicit RefusedReactor(const absl::Status& status) { this->Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_REFUSED_REACTOR_H_
