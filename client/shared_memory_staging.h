// matrixctl --shm: a request's inline operands moved into one new shared-memory region (made,
// registered and, when the region object dies, removed by SharedMemoryRegion), and its result
// matrices pointed there, so that the call carries references only.
#ifndef MATRIXD_CLIENT_SHARED_MEMORY_STAGING_H_
#define MATRIXD_CLIENT_SHARED_MEMORY_STAGING_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "google/protobuf/message.h"

namespace matrixd {

// A result matrix of the operation: its response field ("c", "lu", "solution", ...) and shape.
struct ResultShape {
  std::string field;
  int64_t rows = 0;
  int64_t cols = 0;
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
};

// Makes a region registered as `name` with room for every inline Matrix operand of `request`
// (each field X that has a reference twin X_ref) and for `results`; copies each operand into it
// and sets X_ref in its place; and sets request.result_options.shared_memory_outputs for each
// result. Says on `log` what it copied where. SharedMemoryRegion::Create's errors;
// INVALID_ARGUMENT for results on a request without result_options.
absl::StatusOr<SharedMemoryRegion> StageInSharedMemory(Client& client,
                                                       google::protobuf::Message& request,
                                                       const std::vector<ResultShape>& results,
                                                       const std::string& name, std::ostream& log);

// The inline Matrix of an operand: `matrix` when set, else the matrix `ref` names in `region`
// (copied out), else nullopt (a resident operand, or no region given).
std::optional<v1::Matrix> OperandMatrix(const v1::Matrix* matrix, const v1::MatrixRef& ref,
                                        const SharedMemoryRegion* region);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_SHARED_MEMORY_STAGING_H_
