#include "client/queued_call.h"

namespace matrixd {

void QueuedCall::Start(const Client& client, grpc::GenericStub& stub,
                       const SerializedJobRequest& request, grpc::CompletionQueue* cq, void* tag) {
  reader_.reset();  // before the context whose call holds it
  context_.emplace();
  client.PrepareCallContext(*context_);
  response_.Clear();
  reader_ = stub.PrepareUnaryCall(&*context_, request.method, request.body, cq);
  reader_->StartCall();
  reader_->Finish(&response_, &status_, tag);
}

}  // namespace matrixd
