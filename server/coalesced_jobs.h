// The jobs that may run coalesced (server/coalescing.h): small determinants by LU over R/C and LU
// factorizations of one square matrix (with or without right-hand sides), each with its inputs,
// its response and the backend it runs on. A group of determinants runs as one
// Backend::DeterminantBatch, a group of factorizations as one batched Factorize; each member's
// response then holds exactly what it would hold had it run alone (the CPU backend's bits), with
// stats.algorithm prefixed by "coalesced(<group size>)+" and stats its share of the call.
#ifndef MATRIXD_SERVER_COALESCED_JOBS_H_
#define MATRIXD_SERVER_COALESCED_JOBS_H_

#include <memory>

#include "core/backend.h"
#include "matrixd/v1/matrixd.pb.h"
#include "server/coalescing.h"
#include "server/request_validation.h"

namespace matrixd::server {

// The work of a validated request when it may coalesce, which then owns `inputs` (moved from);
// null, leaving `inputs` alone, when it may not (another method, a
// modulus, an integer dtype, a resident or device operand, deterministic, a batch, a non-square
// or non-LU factorization, result_options, keep_input, refine or estimate_condition). The work
// borrows `response` and `backend` as the job does (server/request_jobs.h).
std::shared_ptr<CoalescibleWork> MakeCoalescible(const v1::DeterminantRequest& request,
                                                 DeterminantInputs& inputs,
                                                 v1::DeterminantResponse* response,
                                                 Backend& backend);
std::shared_ptr<CoalescibleWork> MakeCoalescible(const v1::FactorizeRequest& request,
                                                 FactorizeInputs& inputs,
                                                 v1::FactorizeResponse* response, Backend& backend);

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_COALESCED_JOBS_H_
