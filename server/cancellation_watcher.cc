#include "server/cancellation_watcher.h"

namespace matrixd::server {

CancellationWatcher::CancellationWatcher(const grpc::ServerContext* context, JobControl* control,
                                         absl::Duration poll_interval)
    : thread_([this, context, control, poll_interval] {
        // In the synchronous API IsCancelled() is valid at any time; the handler thread is
        // blocked in the backend meanwhile, so this is the only thread touching the context.
        while (!done_.WaitForNotificationWithTimeout(poll_interval)) {
          if (context->IsCancelled()) {
            control->Cancel();
            return;
          }
        }
      }) {}

CancellationWatcher::~CancellationWatcher() {
  done_.Notify();
  thread_.join();
}

}  // namespace matrixd::server
