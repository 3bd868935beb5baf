#include "client/remote_matrix.h"

#include <utility>

#include "client/client.h"

namespace matrixd {

RemoteMatrix::RemoteMatrix(Client* client, v1::ResidentMatrix info)
    : client_(client), info_(std::move(info)) {}

RemoteMatrix::~RemoteMatrix() { Release(); }

RemoteMatrix::RemoteMatrix(RemoteMatrix&& other) noexcept
    : client_(std::exchange(other.client_, nullptr)), info_(std::move(other.info_)) {}

RemoteMatrix& RemoteMatrix::operator=(RemoteMatrix&& other) noexcept {
  if (this != &other) {
    Release();
    client_ = std::exchange(other.client_, nullptr);
    info_ = std::move(other.info_);
  }
  return *this;
}

std::string RemoteMatrix::Detach() {
  client_ = nullptr;
  std::string handle = std::move(*info_.mutable_handle());
  info_.Clear();
  return handle;
}

v1::MatrixRef RemoteMatrix::ref() const {
  v1::MatrixRef ref;
  ref.set_handle(info_.handle());
  return ref;
}

void RemoteMatrix::Release() {
  if (client_ == nullptr) return;
  // Best effort: the handle may already have expired or been released by name.
  static_cast<void>(client_->Release(info_.handle()));
  client_ = nullptr;
}

}  // namespace matrixd
