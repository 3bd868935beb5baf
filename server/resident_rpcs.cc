// MatrixService's resident-matrix RPCs on the gRPC callback API: Upload feeds each chunk to an
// UploadAssembler as it arrives (no thread waits for the stream), Download writes the chunks of a
// DownloadStream one after the other, ListMatrices and Release answer at once. CreateMatrix,
// Generate and Upload take a layout (core/distributed_resident_matrix.h for DISTRIBUTED).
#include <algorithm>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "core/matrix_generator.h"
#include "core/status_macros.h"
#include "server/download_stream.h"
#include "server/matrix_conversion.h"
#include "server/matrix_service.h"
#include "server/refused_reactor.h"
#include "server/status_conversion.h"
#include "server/upload_assembler.h"

namespace matrixd::server {
namespace {

constexpr char kNoRegistry[] = "this server keeps no resident matrices";

ResidentOwner OwnerOf(const ClientIdentity& client) {
  return {client.name, client.quota.max_resident_bytes};
}

// The next chunk is read while the current one is written on (read-ahead of one): the network
// and the copy toward the device overlap. The mutex keeps the chunks in order and the assembler
// single-threaded; gRPC calls OnReadDone for the next chunk at the earliest after StartRead.
class UploadReactor final : public grpc::ServerReadReactor<v1::UploadChunk> {
 public:
  UploadReactor(grpc::CallbackServerContext* context, ResidentRegistry& registry, Metrics* metrics,
                v1::ResidentMatrix* response, ResidentOwner owner, UploadShapeCheck check_shape)
      : context_(context),
        metrics_(metrics),
        response_(response),
        assembler_(registry, std::move(owner), std::move(check_shape)) {
    StartRead(&incoming_);
  }

  void OnReadDone(bool ok) override {
    absl::MutexLock lock(&mutex_);
    if (finished_) return;
    if (!ok) {
      EndStream();
      return;
    }
    current_.Swap(&incoming_);
    StartRead(&incoming_);
    if (absl::Status added = assembler_.Add(current_); !added.ok()) {
      FinishOnce(ToGrpcStatus(added));
    }
  }

  void OnDone() override { delete this; }

 private:
  // The client ended the stream (or went away: then nothing is kept).
  void EndStream() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (context_->IsCancelled()) {
      FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "upload cancelled by the client"));
      return;
    }
    absl::StatusOr<ResidentInfo> info = assembler_.Finish();
    if (!info.ok()) {
      FinishOnce(ToGrpcStatus(info.status()));
      return;
    }
    ToProto(*info, absl::Now(), response_);
    if (metrics_ != nullptr) {
      metrics_->RecordTransfer("in", "stream", assembler_.bytes_received(), absl::Now() - started_);
    }
    FinishOnce(grpc::Status::OK);
  }

  void FinishOnce(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    finished_ = true;
    Finish(status);
  }

  grpc::CallbackServerContext* const context_;
  Metrics* const metrics_;
  v1::ResidentMatrix* const response_;
  const absl::Time started_ = absl::Now();
  absl::Mutex mutex_;
  UploadAssembler assembler_ ABSL_GUARDED_BY(mutex_);
  v1::UploadChunk incoming_;                         // the read in flight
  v1::UploadChunk current_ ABSL_GUARDED_BY(mutex_);  // the chunk being written on
  bool finished_ ABSL_GUARDED_BY(mutex_) = false;
};

class DownloadReactor final : public grpc::ServerWriteReactor<v1::DownloadChunk> {
 public:
  DownloadReactor(DownloadStream stream, Metrics* metrics)
      : stream_(std::move(stream)), metrics_(metrics) {
    WriteNext();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading"));
      return;
    }
    WriteNext();
  }

  void OnDone() override { delete this; }

 private:
  void WriteNext() {
    absl::StatusOr<bool> more = stream_.Next(&chunk_);
    if (!more.ok()) {
      Finish(ToGrpcStatus(more.status()));
      return;
    }
    if (!*more) {
      if (metrics_ != nullptr) {
        metrics_->RecordTransfer("out", "stream", stream_.bytes(), absl::Now() - started_);
      }
      Finish(grpc::Status::OK);
      return;
    }
    StartWrite(&chunk_);
  }

  DownloadStream stream_;
  Metrics* const metrics_;
  v1::DownloadChunk chunk_;
  const absl::Time started_ = absl::Now();
};

}  // namespace

grpc::ServerReadReactor<v1::UploadChunk>* MatrixService::Upload(
    grpc::CallbackServerContext* context, v1::ResidentMatrix* response) {
  if (resident_ == nullptr) {
    return new RefusedReactor<grpc::ServerReadReactor<v1::UploadChunk>>(
        absl::UnimplementedError(kNoRegistry));
  }
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> client = Identify(*context);
  if (!client.ok()) {
    return new RefusedReactor<grpc::ServerReadReactor<v1::UploadChunk>>(client.status());
  }
  if (absl::Status open = scheduler_.accepting(); !open.ok()) {
    return new RefusedReactor<grpc::ServerReadReactor<v1::UploadChunk>>(open);
  }
  // The reactor (and so the check) ends before the service does.
  UploadShapeCheck check_shape = [this, identity = *client](int64_t rows, int64_t cols,
                                                            v1::DType dtype) {
    return CheckNewShape(rows, cols, dtype, "upload's first message", *identity);
  };
  return new UploadReactor(context, *resident_, metrics_, response, OwnerOf(**client),
                           std::move(check_shape));
}

grpc::ServerWriteReactor<v1::DownloadChunk>* MatrixService::Download(
    grpc::CallbackServerContext* context, const v1::DownloadRequest* request) {
  if (resident_ == nullptr) {
    return new RefusedReactor<grpc::ServerWriteReactor<v1::DownloadChunk>>(
        absl::UnimplementedError(kNoRegistry));
  }
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> client = Identify(*context);
  if (!client.ok()) {
    return new RefusedReactor<grpc::ServerWriteReactor<v1::DownloadChunk>>(client.status());
  }
  absl::StatusOr<DownloadStream> stream =
      DownloadStream::Start(*resident_, *request, max_response_bytes_, (*client)->name);
  if (!stream.ok()) {
    return new RefusedReactor<grpc::ServerWriteReactor<v1::DownloadChunk>>(stream.status());
  }
  return new DownloadReactor(*std::move(stream), metrics_);
}

grpc::ServerUnaryReactor* MatrixService::ListMatrices(grpc::CallbackServerContext* context,
                                                      const v1::ListMatricesRequest* /*request*/,
                                                      v1::ListMatricesResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (resident_ == nullptr) {
    reactor->Finish(ToGrpcStatus(absl::UnimplementedError(kNoRegistry)));
    return reactor;
  }
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> client = Identify(*context);
  if (!client.ok()) {
    reactor->Finish(ToGrpcStatus(client.status()));
    return reactor;
  }
  const absl::Time now = absl::Now();
  for (const ResidentInfo& info : resident_->List((*client)->name)) {
    ToProto(info, now, response->add_matrices());
  }
  // The caller's own bytes, against the tighter of the server's limit and its quota.
  const uint64_t quota = (*client)->quota.max_resident_bytes;
  response->set_resident_bytes(resident_->owner_bytes((*client)->name));
  response->set_limit_bytes(quota > 0 ? std::min(quota, resident_->limit_bytes())
                                      : resident_->limit_bytes());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* MatrixService::Release(grpc::CallbackServerContext* context,
                                                 const v1::ReleaseRequest* request,
                                                 v1::ReleaseResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::Status status = absl::OkStatus();
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> client = Identify(*context);
  if (!client.ok()) {
    status = client.status();
  } else if (resident_ == nullptr) {
    status = absl::UnimplementedError(kNoRegistry);
  } else if (request->handle().empty()) {
    status = absl::InvalidArgumentError("handle is empty");
  } else if (absl::StatusOr<uint64_t> freed =
                 resident_->Release(request->handle(), (*client)->name);
             freed.ok()) {
    response->set_bytes_freed(*freed);
  } else {
    status = freed.status();
  }
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

absl::StatusOr<UploadShape> MatrixService::CheckNewShape(int64_t rows, int64_t cols,
                                                         v1::DType dtype, const char* what,
                                                         const ClientIdentity& client) const {
  absl::StatusOr<UploadShape> shape = CheckWithinQuota(limits_, client, [&](const Limits& limits) {
    return CheckUploadShape(rows, cols, dtype, what, limits);
  });
  if (!shape.ok()) return CountRejection(client, shape.status());
  return shape;
}

absl::StatusOr<UploadShape> MatrixService::CheckNewMatrix(int64_t rows, int64_t cols,
                                                          v1::DType dtype, const char* rpc,
                                                          const ClientIdentity& client) {
  if (resident_ == nullptr) return absl::UnimplementedError(kNoRegistry);
  if (absl::Status open = scheduler_.accepting(); !open.ok()) return open;
  return CheckNewShape(rows, cols, dtype, rpc, client);
}

grpc::ServerUnaryReactor* MatrixService::CreateMatrix(grpc::CallbackServerContext* context,
                                                      const v1::CreateMatrixRequest* request,
                                                      v1::ResidentMatrix* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::Status status = [&]() -> absl::Status {
    MATRIXD_ASSIGN_OR_RETURN(std::shared_ptr<const ClientIdentity> client, Identify(*context));
    absl::StatusOr<UploadShape> shape =
        CheckNewMatrix(request->rows(), request->cols(), request->dtype(), "CreateMatrix", *client);
    if (!shape.ok()) return shape.status();
    MATRIXD_ASSIGN_OR_RETURN(ResidentLayout layout, FromProto(request->layout(), "layout"));
    absl::StatusOr<ResidentInfo> info = resident_->CreateFilling(
        shape->rows, shape->cols, shape->dtype, request->label(), OwnerOf(*client), layout);
    if (!info.ok()) return CountRejection(*client, info.status());
    ToProto(*info, absl::Now(), response);
    return absl::OkStatus();
  }();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* MatrixService::Generate(grpc::CallbackServerContext* context,
                                                  const v1::GenerateRequest* request,
                                                  v1::ResidentMatrix* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::Status status = [&]() -> absl::Status {
    MATRIXD_ASSIGN_OR_RETURN(std::shared_ptr<const ClientIdentity> client, Identify(*context));
    absl::StatusOr<UploadShape> shape =
        CheckNewMatrix(request->rows(), request->cols(), request->dtype(), "Generate", *client);
    if (!shape.ok()) return shape.status();
    GeneratorOptions options{.seed = request->seed()};
    switch (request->generator()) {
      case v1::GENERATOR_RANDOM:
        options.kind = GeneratorKind::kRandom;
        break;
      case v1::GENERATOR_IDENTITY:
        options.kind = GeneratorKind::kIdentity;
        break;
      case v1::GENERATOR_HILBERT:
        options.kind = GeneratorKind::kHilbert;
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat("generator ", request->generator(),
                                                       " is not RANDOM, IDENTITY or HILBERT"));
    }
    if (absl::Status valid = CheckGenerator(options, shape->dtype); !valid.ok()) return valid;
    MATRIXD_ASSIGN_OR_RETURN(ResidentLayout layout, FromProto(request->layout(), "layout"));
    // On a GPU the entries are made there, each distributed part on its own GPU, in place.
    absl::StatusOr<std::unique_ptr<PendingResident>> pending = resident_->Create(
        shape->rows, shape->cols, shape->dtype, request->label(), -1, OwnerOf(*client), layout);
    if (!pending.ok()) return CountRejection(*client, pending.status());
    if (absl::Status made = GenerateInto((*pending)->matrix(), options); !made.ok()) return made;
    absl::StatusOr<ResidentInfo> info = resident_->Commit(*std::move(pending), /*finite=*/true);
    if (!info.ok()) return info.status();
    ToProto(*info, absl::Now(), response);
    return absl::OkStatus();
  }();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace matrixd::server
