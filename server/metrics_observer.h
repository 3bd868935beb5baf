// Feeds the scheduler's events into Metrics: queue depth, queue wait and jobs by final status.
#ifndef MATRIXD_SERVER_METRICS_OBSERVER_H_
#define MATRIXD_SERVER_METRICS_OBSERVER_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/job.h"
#include "server/metrics.h"
#include "server/scheduler.h"

namespace matrixd::server {

class MetricsSchedulerObserver final : public SchedulerObserver {
 public:
  // `metrics` must outlive the observer.
  explicit MetricsSchedulerObserver(Metrics& metrics) : metrics_(metrics) {}

  void QueueDepthChanged(int depth) override { metrics_.RecordQueueDepth(depth); }
  void JobStarted(const Job& /*job*/, absl::Duration waited) override {
    metrics_.RecordQueueWait(waited);
  }
  void JobEnded(absl::string_view op, const absl::Status& status) override {
    metrics_.RecordJob(op, status.code());
  }
  void ClientJobEnded(absl::string_view client, const absl::Status& status) override {
    metrics_.RecordClientJob(client, status.code());
  }
  void GroupStarted(absl::string_view op, int size) override {
    metrics_.RecordCoalescedGroup(op, size);
  }

 private:
  Metrics& metrics_;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_METRICS_OBSERVER_H_
