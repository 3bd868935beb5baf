// A job's state as the API shows it (matrixd.v1.JobUpdate).
#ifndef MATRIXD_SERVER_JOB_UPDATE_H_
#define MATRIXD_SERVER_JOB_UPDATE_H_

#include "matrixd/v1/matrixd.pb.h"
#include "server/job.h"

namespace matrixd::server {

v1::JobState ToProto(JobState state);

// The job's id, state, progress, times and ETA (-1 when unknown); its result once it has
// succeeded, its error once it has failed or been cancelled.
v1::JobUpdate ToJobUpdate(const Job& job);
// The same from a snapshot of the job taken before.
v1::JobUpdate ToJobUpdate(const Job& job, const JobSnapshot& snapshot);

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_JOB_UPDATE_H_
