// Cancels a JobControl when the client goes away: the call is cancelled, its deadline passes or
// the server shuts down. The synchronous gRPC API has no callback for that, so a small thread
// polls ServerContext::IsCancelled() while the operation runs.
#ifndef MATRIXD_SERVER_CANCELLATION_WATCHER_H_
#define MATRIXD_SERVER_CANCELLATION_WATCHER_H_

#include <grpcpp/server_context.h>

#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/job_control.h"

namespace matrixd::server {

class CancellationWatcher {
 public:
  // Starts watching; `context` and `control` must outlive the watcher.
  CancellationWatcher(const grpc::ServerContext* context, JobControl* control,
                      absl::Duration poll_interval = absl::Milliseconds(20));
  // Stops watching (joins the thread) before the handler returns.
  ~CancellationWatcher();

  CancellationWatcher(const CancellationWatcher&) = delete;
  CancellationWatcher& operator=(const CancellationWatcher&) = delete;

 private:
  absl::Notification done_;
  std::thread thread_;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_CANCELLATION_WATCHER_H_
