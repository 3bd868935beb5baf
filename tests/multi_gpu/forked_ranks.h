// Starts the R ranks of a one-process-per-GPU job without MPI: forks R children before the parent
// touches CUDA, rank 0 makes a token (NCCL's unique id) and hands it to the others through pipes,
// and each child runs the job's body with its rank. A child that fails makes the parent end the
// others (they would wait in NCCL forever), and children die with the parent (a `timeout` that
// kills the parent frees the GPUs).
#ifndef MATRIXD_TESTS_MULTI_GPU_FORKED_RANKS_H_
#define MATRIXD_TESTS_MULTI_GPU_FORKED_RANKS_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace matrixd::testing {

// Runs body(rank, token) in `ranks` forked children, token being what make_token() returned in
// rank 0 (called there, after the fork). Returns 0 when every child exited with 0, otherwise the
// first non-zero exit code seen (128 + signal for a child killed by a signal), after killing the
// children still running. REQUIRES: ranks >= 1; no CUDA call in this process before.
int RunForkedRanks(int ranks, const std::function<absl::StatusOr<std::string>()>& make_token,
                   const std::function<int(int rank, const std::string& token)>& body);

}  // namespace matrixd::testing

#endif  // MATRIXD_TESTS_MULTI_GPU_FORKED_RANKS_H_
