// The provenance of an answer (issue 15, docs/accuracy.md): which backend, device, driver and
// libraries computed it, in what precision, and a CRC32C of the result's bytes, stamped into the
// response's stats once the result is in it.
#ifndef MATRIXD_SERVER_PROVENANCE_H_
#define MATRIXD_SERVER_PROVENANCE_H_

#include <cstdint>

#include "core/backend.h"
#include "core/matrix.h"
#include "google/protobuf/message.h"
#include "matrixd/v1/matrix.pb.h"

namespace matrixd::server {

// CRC32C of `response` serialized deterministically without its `stats` and `kept` fields (those
// it has), streamed through a small buffer: no copy of the result. The fields are swapped out and
// back, so `response` is unchanged afterwards.
uint32_t ResultCrc32c(google::protobuf::Message& response);

// Fills stats.versions from `backend`, stats.precision with `input`'s dtype name when the backend
// left it empty, and stats.result_crc32c from `response` (whose stats `stats` is).
void StampProvenance(const Backend& backend, DType input, google::protobuf::Message& response,
                     v1::ComputeStats* stats);

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_PROVENANCE_H_
