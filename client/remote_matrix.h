// RemoteMatrix: a matrix that lives on a matrixd server (a resident matrix), owned by the client
// that made it: it releases its handle when destroyed, unless detached. Movable, not copyable.
#ifndef MATRIXD_CLIENT_REMOTE_MATRIX_H_
#define MATRIXD_CLIENT_REMOTE_MATRIX_H_

#include <cstdint>
#include <string>

#include "matrixd/v1/matrixd.pb.h"

namespace matrixd {

class Client;

class RemoteMatrix {
 public:
  // Owns nothing.
  RemoteMatrix() = default;
  // Owns the matrix `info` names on `client`'s server. REQUIRES: the client outlives this.
  RemoteMatrix(Client* client, v1::ResidentMatrix info);
  // Releases the handle (an error, e.g. an already expired handle, is ignored).
  ~RemoteMatrix();
  RemoteMatrix(RemoteMatrix&& other) noexcept;
  RemoteMatrix& operator=(RemoteMatrix&& other) noexcept;
  RemoteMatrix(const RemoteMatrix&) = delete;
  RemoteMatrix& operator=(const RemoteMatrix&) = delete;

  // Stops owning the matrix, which stays on the server until released or expired; returns its
  // handle. The RemoteMatrix is empty afterwards.
  std::string Detach();

  // True while it owns a handle.
  bool owns() const { return client_ != nullptr; }
  const std::string& handle() const { return info_.handle(); }
  int64_t rows() const { return info_.rows(); }
  int64_t cols() const { return info_.cols(); }
  v1::DType dtype() const { return info_.dtype(); }
  uint64_t bytes() const { return info_.bytes(); }
  const std::string& device() const { return info_.device(); }
  // Everything the server said when it made the matrix.
  const v1::ResidentMatrix& info() const { return info_; }
  // The reference a request takes in place of an inline matrix.
  v1::MatrixRef ref() const;

 private:
  void Release();

  Client* client_ = nullptr;
  v1::ResidentMatrix info_;
};

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_REMOTE_MATRIX_H_
