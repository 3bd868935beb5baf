// QueuedCall: one unary computing call of a serialized request (Client::SerializeJobRequest) on a
// completion queue the caller polls, through gRPC's generic stub: no serialization per call and no
// callback thread between the answer and the caller. `matrixctl load --load_api=queue` keeps many
// of them in flight from a few threads.
#ifndef MATRIXD_CLIENT_QUEUED_CALL_H_
#define MATRIXD_CLIENT_QUEUED_CALL_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "client/client.h"

namespace matrixd {

class QueuedCall {
 public:
  // Starts `request` on `stub` (a generic stub over client.channel()) with the client's deadline
  // and token. `tag` comes out of cq->Next() once the call has finished; then status() says how.
  // REQUIRES: the previous call of this object, if any, has finished; `request`, `stub`, `cq` and
  // the client outlive the call.
  void Start(const Client& client, grpc::GenericStub& stub, const SerializedJobRequest& request,
             grpc::CompletionQueue* cq, void* tag);
  // The finished call's status; its response is dropped.
  absl::Status status() const { return ToAbslStatus(status_); }

 private:
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> reader_;  // lives in the call's arena
  std::optional<grpc::ClientContext> context_;  // one per call: a context is not reusable
  grpc::ByteBuffer response_;
  grpc::Status status_;
};

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_QUEUED_CALL_H_
