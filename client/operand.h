// matrixd::Operand: a matrix an operation takes, wherever it is: sent inline (a Matrix message),
// named by handle (a RemoteMatrix on the server), or placed in a registered shared-memory region
// (a SharedMatrixView). Client's operation overloads take Operands, so one call serves all three.
#ifndef MATRIXD_CLIENT_OPERAND_H_
#define MATRIXD_CLIENT_OPERAND_H_

#include <utility>
#include <variant>

#include "client/remote_matrix.h"
#include "client/shared_memory_region.h"
#include "matrixd/v1/matrixd.pb.h"

namespace matrixd {

class Operand {
 public:
  // Inline: the bytes travel in the request.
  Operand(v1::Matrix matrix) : value_(std::move(matrix)) {}  // NOLINT: implicit by design
  // By handle. REQUIRES: `matrix` stays alive during the call.
  Operand(const RemoteMatrix& matrix) : value_(matrix.ref()) {}  // NOLINT
  // In shared memory. REQUIRES: its region stays registered during the call.
  Operand(const SharedMatrixView& view) : value_(view.ref()) {}  // NOLINT

  bool is_inline() const { return std::holds_alternative<v1::Matrix>(value_); }

  // Moves it into `request`'s inline field (e.g. &DeterminantRequest::mutable_matrix) or its
  // reference field (&DeterminantRequest::mutable_matrix_ref), whichever fits.
  template <typename Request>
  void MoveInto(Request& request, v1::Matrix* (Request::*inline_field)(),
                v1::MatrixRef* (Request::*ref_field)()) && {
    if (v1::Matrix* matrix = std::get_if<v1::Matrix>(&value_)) {
      *(request.*inline_field)() = std::move(*matrix);
    } else {
      *(request.*ref_field)() = std::move(std::get<v1::MatrixRef>(value_));
    }
  }

 private:
  std::variant<v1::Matrix, v1::MatrixRef> value_;
};

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_OPERAND_H_
