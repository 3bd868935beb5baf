// The children (series) of one prometheus-cpp family by their label values, cached so that
// recording a sample on the request path builds no prometheus::Labels map and takes no family
// mutex once its series exists: one reader lock and one hash probe (issue 13). A series is still
// created by the family on its first Get, so what the registry exports is unchanged.
// Thread-safe. Children are never removed from the family, so a returned reference stays valid
// for the family's life.
#ifndef MATRIXD_SERVER_LABELLED_CHILDREN_H_
#define MATRIXD_SERVER_LABELLED_CHILDREN_H_

#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/labels.h>

#include <array>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace matrixd::server {

template <typename Metric, size_t N>
class LabelledChildren {
 public:
  using Values = std::array<absl::string_view, N>;

  // `names` are the label names, in the order Get takes their values. For a histogram family,
  // `buckets` are every child's bucket bounds. `family` and `buckets` must outlive this.
  LabelledChildren(prometheus::Family<Metric>& family, std::array<const char*, N> names,
                   const prometheus::Histogram::BucketBoundaries* buckets = nullptr)
      : family_(family), names_(names), buckets_(buckets) {}
  LabelledChildren(const LabelledChildren&) = delete;
  LabelledChildren& operator=(const LabelledChildren&) = delete;

  // The child labelled names[i] = values[i], created in the family on first use.
  Metric& Get(const Values& values) {
    {
      absl::ReaderMutexLock lock(&mutex_);
      const auto it = children_.find(values);
      if (it != children_.end()) return *it->second;
    }
    prometheus::Labels labels;
    Key key;
    for (size_t i = 0; i < N; ++i) {
      key[i] = std::string(values[i]);
      labels.emplace(names_[i], key[i]);
    }
    Metric* child;
    if constexpr (std::is_same_v<Metric, prometheus::Histogram>) {
      child = &family_.Add(labels, *buckets_);
    } else {
      child = &family_.Add(labels);
    }
    absl::MutexLock lock(&mutex_);
    children_.try_emplace(std::move(key), child);
    return *child;
  }

 private:
  using Key = std::array<std::string, N>;

  static Values ViewsOf(const Key& key) {
    Values views;
    for (size_t i = 0; i < N; ++i) views[i] = key[i];
    return views;
  }
  // Transparent, so that a lookup by string_views copies no string.
  struct Hash {
    using is_transparent = void;
    size_t operator()(const Values& values) const { return absl::HashOf(values); }
    size_t operator()(const Key& key) const { return absl::HashOf(ViewsOf(key)); }
  };
  struct Eq {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      for (size_t i = 0; i < N; ++i) {
        if (absl::string_view(a[i]) != absl::string_view(b[i])) return false;
      }
      return true;
    }
  };

  prometheus::Family<Metric>& family_;
  const std::array<const char*, N> names_;
  const prometheus::Histogram::BucketBoundaries* const buckets_;
  absl::Mutex mutex_;
  absl::flat_hash_map<Key, Metric*, Hash, Eq> children_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_LABELLED_CHILDREN_H_
