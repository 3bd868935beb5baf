// libFuzzer target: the first byte picks a request type; the rest is parsed as that message and
// validated as the server does (default Limits, no registry). Must never crash.
#include <cstddef>
#include <cstdint>

#include "core/validation.h"
#include "matrixd/v1/matrixd.pb.h"
#include "server/request_validation.h"

namespace {

template <typename Request>
void ParseAndValidate(const uint8_t* data, size_t size) {
  Request request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  (void)matrixd::server::ValidateRequest(request, matrixd::Limits{});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t* body = data + 1;
  const size_t body_size = size - 1;
  switch (data[0] % 5) {
    case 0:
      ParseAndValidate<matrixd::v1::DeterminantRequest>(body, body_size);
      break;
    case 1:
      ParseAndValidate<matrixd::v1::FactorizeRequest>(body, body_size);
      break;
    case 2:
      ParseAndValidate<matrixd::v1::SolveRequest>(body, body_size);
      break;
    case 3:
      ParseAndValidate<matrixd::v1::MultiplyRequest>(body, body_size);
      break;
    default:
      ParseAndValidate<matrixd::v1::PermanentRequest>(body, body_size);
      break;
  }
  return 0;
}
