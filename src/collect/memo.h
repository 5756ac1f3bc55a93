// Replaying a fleet: a collector asked the same questions and given the same answers on another
// node gives the same evidence. Collectors are pure functions of the host's answers and of the
// options (the same for one replay), so a collector's evidence is kept with the sequence of
// (question, answer digest) that produced it; a node whose answers follow a sequence seen before
// gets that evidence without running the collector. Nodes of one image share most of their
// evidence (libraries, configuration, packages, PCI devices); what differs per node (processes,
// kernel log, counters) is collected as before.
//
// Rules that keep it exact (tests/memo_test.cc): answers are compared by a 128-bit XXH3 digest of
// every field but a command's duration (no collector outside the active probes reads it; active
// probes are never memoised); a collector whose question sequence ever diverges from its memo is
// run normally from then on; a collector whose answers differ on most nodes is given up after
// kGiveUpAfter sequences, so memory stays flat in the node count.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "collect/collector.h"
#include "host/bundle.h"

namespace clustermax::collect {

class CollectorMemo {
 public:
  static constexpr size_t kGiveUpAfter = 48;  // distinct answer sequences kept per collector, at most

  CollectorMemo();
  ~CollectorMemo();
  CollectorMemo(const CollectorMemo&) = delete;
  CollectorMemo& operator=(const CollectorMemo&) = delete;

  // The collector's evidence on the node `replay` answers for: from the memo when its answers
  // follow a known sequence (the misses the questions met are recorded on `replay` as a run would),
  // else `run` on a host that records the sequence, kept for the next nodes.
  // `*serial` names the evidence: two nodes given the same non-zero serial got identical evidence
  // (a judge reading only such evidence judges them alike); 0 when it is not kept.
  core::Evidence Collect(const Collector& c, host::ReplayHost& replay,
                         const std::function<core::Evidence(host::Host&)>& run, uint64_t* serial);

  struct Stats {
    size_t reused = 0;     // evidence taken from the memo
    size_t collected = 0;  // collectors run
    size_t given_up = 0;   // collectors no longer memoised (answers differ per node, or diverged)
  };
  Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clustermax::collect
