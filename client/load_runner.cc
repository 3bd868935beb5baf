#include "client/load_runner.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "client/load_requests.h"

namespace matrixd {
namespace {

// The requests still to send, shared by the workers: a counter, and the time from which no new
// request starts.
class RequestBudget {
 public:
  RequestBudget(int64_t requests, std::chrono::steady_clock::time_point stop_at)
      : requests_(requests), stop_at_(stop_at) {}

  // The index of the next request to send, or -1 when the run is over.
  int64_t Take() {
    if (std::chrono::steady_clock::now() >= stop_at_) return -1;
    const int64_t index = next_.fetch_add(1, std::memory_order_relaxed);
    return requests_ > 0 && index >= requests_ ? -1 : index;
  }

 private:
  const int64_t requests_;  // 0: no limit
  const std::chrono::steady_clock::time_point stop_at_;
  std::atomic<int64_t> next_{0};
};

// Blocking calls: one thread per request in flight.
void Work(Client& client, const std::vector<v1::JobRequest>& requests, int64_t matrices,
          RequestBudget& budget, LoadTally& tally) {
  for (int64_t index = budget.Take(); index >= 0; index = budget.Take()) {
    const v1::JobRequest& request = requests[static_cast<size_t>(index) % requests.size()];
    const auto start = std::chrono::steady_clock::now();
    const absl::Status status = SendLoadRequest(client, request);
    const auto end = std::chrono::steady_clock::now();
    tally.Record(status, matrices, absl::FromChrono(end - start), absl::Now());
  }
}

// Callback calls, closed loop: `concurrency` slots, each with one request in flight at a time
// (slot k on clients[k mod clients.size()]) and its own tally. A completion records into its
// slot's tally and starts the slot's next request itself, on whichever gRPC thread ran it: no
// hand-off to a sending thread, no lock shared by the slots. (With one sending thread woken by
// each completion, that thread and its futex ping-pong were the load's limit: ~14 K requests/s a
// process on an H100 host's cores, issue 13.)
class CallbackLoad : public std::enable_shared_from_this<CallbackLoad> {
 public:
  CallbackLoad(std::vector<std::unique_ptr<Client>>& clients, int concurrency,
               const std::vector<v1::JobRequest>& requests, int64_t matrices, RequestBudget& budget)
      : clients_(clients),
        requests_(requests),
        matrices_(matrices),
        budget_(budget),
        tallies_(static_cast<size_t>(concurrency)),
        running_(concurrency) {}

  // Starts every slot and returns their tallies merged once the budget has run out and every
  // slot's last request has ended.
  LoadTally Run() {
    for (int slot = 0; slot < static_cast<int>(tallies_.size()); ++slot) Continue(slot);
    all_done_.WaitForNotification();
    LoadTally merged;
    for (const LoadTally& tally : tallies_) merged.Merge(tally);
    return merged;
  }

 private:
  // One request of a slot: which of the starter (StartJobRequest returning) and the completion
  // comes second goes on with the slot, so a completion that runs inside the start (gRPC may fail
  // a call at once) does not recurse, and one on another thread does not race the starter.
  struct Attempt {
    std::chrono::steady_clock::time_point start;
    std::atomic<bool> other_side_done{false};
  };

  // Sends the slot's requests until one completes on another thread after its start returned
  // (that thread goes on) or the budget runs out (the slot ends).
  void Continue(int slot) {
    for (;;) {
      const int64_t index = budget_.Take();
      if (index < 0) {
        if (running_.fetch_sub(1, std::memory_order_acq_rel) == 1) all_done_.Notify();
        return;
      }
      auto attempt = std::make_shared<Attempt>();
      attempt->start = std::chrono::steady_clock::now();
      const v1::JobRequest& request = requests_[static_cast<size_t>(index) % requests_.size()];
      clients_[static_cast<size_t>(slot) % clients_.size()]->StartJobRequest(
          request, [self = shared_from_this(), slot, attempt](absl::Status status) {
            const auto end = std::chrono::steady_clock::now();
            self->tallies_[static_cast<size_t>(slot)].Record(
                status, self->matrices_, absl::FromChrono(end - attempt->start), absl::Now());
            if (attempt->other_side_done.exchange(true, std::memory_order_acq_rel)) {
              self->Continue(slot);
            }
          });
      if (!attempt->other_side_done.exchange(true, std::memory_order_acq_rel)) return;
    }
  }

  std::vector<std::unique_ptr<Client>>& clients_;
  const std::vector<v1::JobRequest>& requests_;
  const int64_t matrices_;
  RequestBudget& budget_;
  // Slot k's tally: written by one request's completion at a time, each ordered after the one
  // before by its Attempt's exchange.
  std::vector<LoadTally> tallies_;
  std::atomic<int> running_;  // slots not yet ended
  absl::Notification all_done_;
};

}  // namespace

absl::StatusOr<LoadReport> RunLoad(const std::string& target, const ClientOptions& client_options,
                                   const LoadOptions& options) {
  absl::StatusOr<std::vector<v1::JobRequest>> requests = MakeLoadRequests(options);
  if (!requests.ok()) return requests.status();

  // One client per blocking worker (per connection for callback calls), each connected before
  // the clock starts, so that the first requests do not pay for connecting; worker k on
  // connection k mod options.connections.
  const int client_count =
      options.api == LoadApi::kBlocking ? options.concurrency : options.connections;
  std::vector<std::unique_ptr<Client>> clients;
  for (int k = 0; k < client_count; ++k) {
    ClientOptions worker_options = client_options;
    if (options.connections > 1) worker_options.connection = k % options.connections + 1;
    clients.push_back(std::make_unique<Client>(target, worker_options));
    if (absl::StatusOr<bool> healthy = clients.back()->Healthy(); !healthy.ok()) {
      return absl::Status(healthy.status().code(),
                          absl::StrCat("health check of ", target,
                                       " before the run: ", healthy.status().message()));
    }
  }

  const auto start = std::chrono::steady_clock::now();
  const auto stop_at = options.duration > absl::ZeroDuration()
                           ? start + absl::ToChronoNanoseconds(options.duration)
                           : std::chrono::steady_clock::time_point::max();
  RequestBudget budget(options.requests, stop_at);
  const int64_t matrices = MatricesPerRequest(options);
  std::vector<LoadTally> tallies(clients.size());
  if (options.api == LoadApi::kCallback) {
    tallies.front() =
        std::make_shared<CallbackLoad>(clients, options.concurrency, *requests, matrices, budget)
            ->Run();
  } else {
    std::vector<std::jthread> workers;
    for (size_t k = 0; k < clients.size(); ++k) {
      workers.emplace_back(Work, std::ref(*clients[k]), std::cref(*requests), matrices,
                           std::ref(budget), std::ref(tallies[k]));
    }
  }  // joins the workers
  const auto end = std::chrono::steady_clock::now();

  LoadReport report;
  report.options = options;
  report.wall = absl::FromChrono(end - start);
  report.distinct_requests = static_cast<int64_t>(requests->size());
  for (const LoadTally& tally : tallies) report.tally.Merge(tally);
  return report;
}

}  // namespace matrixd
