#include "collect/memo.h"

#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace clustermax::collect {
namespace {

using Digest = std::pair<uint64_t, uint64_t>;

// One question a collector asked its host, as the replay answers it (a command by its argv; the
// timeout and output limit do not change a recorded answer).
struct Question {
  enum Kind : uint8_t { kFile, kSample, kDir, kStat, kRun, kWhich, kEnv, kNvml } kind = kFile;
  std::vector<std::string> words;  // path or name; a command's argv
  size_t max_bytes = 0;
  int sample = 0;
  bool operator==(const Question& o) const {
    return kind == o.kind && words == o.words && max_bytes == o.max_bytes && sample == o.sample;
  }
};

// XXH3-128 over the answer's fields, each framed by its length.
class Hasher {
 public:
  Hasher() { XXH3_128bits_reset(&state_); }
  Hasher& Add(std::string_view s) {
    uint64_t n = s.size();
    XXH3_128bits_update(&state_, &n, sizeof n);
    XXH3_128bits_update(&state_, s.data(), s.size());
    return *this;
  }
  Hasher& Add(int64_t v) {
    XXH3_128bits_update(&state_, &v, sizeof v);
    return *this;
  }
  Digest Done() {
    XXH128_hash_t h = XXH3_128bits_digest(&state_);
    return {h.low64, h.high64};
  }

 private:
  XXH3_state_t state_;
};

Digest Of(const host::FileResult& r) {
  return Hasher().Add(static_cast<int64_t>(r.status)).Add(r.truncated).Add(r.error).Add(r.content).Done();
}
Digest Of(const host::DirResult& r) {
  Hasher h;
  h.Add(static_cast<int64_t>(r.status)).Add(r.error).Add(static_cast<int64_t>(r.entries.size()));
  for (const auto& e : r.entries) h.Add(e.name).Add(e.type);
  return h.Done();
}
Digest Of(const host::StatResult& r) {
  return Hasher()
      .Add(static_cast<int64_t>(r.status))
      .Add(r.type)
      .Add(static_cast<int64_t>(r.mode))
      .Add(static_cast<int64_t>(r.size))
      .Add(r.link_target)
      .Add(r.error)
      .Done();
}
// Every field but duration_ms: no collector but the active probes (never memoised) reads it
// (pinned by Memo.CollectorsDoNotReadCommandDurations).
Digest Of(const host::CommandResult& r) {
  return Hasher()
      .Add(static_cast<int64_t>(r.status))
      .Add(r.exit_code)
      .Add(r.signal)
      .Add(r.out)
      .Add(r.err)
      .Add(r.timed_out)
      .Add(r.truncated)
      .Add(r.resolved)
      .Add(r.error)
      .Done();
}
Digest Of(const host::WhichResult& r) { return Hasher().Add(static_cast<int64_t>(r.status)).Add(r.path).Done(); }
Digest Of(const std::optional<std::string>& v) {
  return Hasher().Add(v.has_value()).Add(v ? *v : std::string()).Done();
}
Digest Of(const host::NvmlResult& r) {
  return Hasher()
      .Add(static_cast<int64_t>(r.status))
      .Add(r.error)
      .Add(r.data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .Done();
}

// Asks the replay the question again; the digest of its answer. The large answers (files,
// listings, command output) are read in place in the bundle when the replay would return them
// whole; anything else (a miss, which the replay records; a file cut short) is asked as usual.
Digest Ask(host::ReplayHost& h, const Question& q) {
  const host::Bundle& b = h.bundle();
  switch (q.kind) {
    case Question::kFile:
      if (const auto* r = b.PeekFile(q.words[0]); r && r->content.size() <= q.max_bytes) return Of(*r);
      return Of(h.ReadFile(q.words[0], q.max_bytes));
    case Question::kSample:
      return Of(h.ReadFileSample(q.words[0], q.sample, q.max_bytes));
    case Question::kDir:
      if (const auto* r = b.PeekDir(q.words[0])) return Of(*r);
      return Of(h.ListDir(q.words[0]));
    case Question::kStat:
      return Of(h.Stat(q.words[0]));
    case Question::kRun: {
      if (const auto* r = b.PeekCommand(q.words)) return Of(*r);
      host::CommandSpec spec;
      spec.argv = q.words;
      return Of(h.Run(spec));
    }
    case Question::kWhich:
      return Of(h.Which(q.words[0]));
    case Question::kEnv:
      return Of(h.GetEnv(q.words[0]));
    case Question::kNvml:
      return Of(h.QueryNvml(std::chrono::milliseconds(0)));
  }
  return {};
}

// Forwards to the replay and writes down every question with the digest of its answer.
class TracingHost : public host::HostWrapper {
 public:
  using HostWrapper::HostWrapper;
  std::vector<std::pair<Question, Digest>> trace;

  host::FileResult ReadFile(const std::string& path, size_t max_bytes) override {
    auto r = target().ReadFile(path, max_bytes);
    trace.push_back({{Question::kFile, {path}, max_bytes, 0}, Of(r)});
    return r;
  }
  host::FileResult ReadFileSample(const std::string& path, int sample, size_t max_bytes) override {
    auto r = target().ReadFileSample(path, sample, max_bytes);
    trace.push_back({{Question::kSample, {path}, max_bytes, sample}, Of(r)});
    return r;
  }
  host::DirResult ListDir(const std::string& path) override {
    auto r = target().ListDir(path);
    trace.push_back({{Question::kDir, {path}, 0, 0}, Of(r)});
    return r;
  }
  host::StatResult Stat(const std::string& path) override {
    auto r = target().Stat(path);
    trace.push_back({{Question::kStat, {path}, 0, 0}, Of(r)});
    return r;
  }
  host::CommandResult Run(const host::CommandSpec& spec) override {
    auto r = target().Run(spec);
    trace.push_back({{Question::kRun, spec.argv, 0, 0}, Of(r)});
    return r;
  }
  host::WhichResult Which(const std::string& name) override {
    auto r = target().Which(name);
    trace.push_back({{Question::kWhich, {name}, 0, 0}, Of(r)});
    return r;
  }
  std::optional<std::string> GetEnv(const std::string& name) override {
    auto r = target().GetEnv(name);
    trace.push_back({{Question::kEnv, {name}, 0, 0}, Of(r)});
    return r;
  }
  host::NvmlResult QueryNvml(std::chrono::milliseconds timeout) override {
    auto r = target().QueryNvml(timeout);
    trace.push_back({{Question::kNvml, {}, 0, 0}, Of(r)});
    return r;
  }
};

// A point in a collector's conversation with its host: the question it asks next, or (a leaf)
// the evidence it returned.
struct Node {
  std::optional<Question> ask;
  std::shared_ptr<const core::Evidence> evidence;
  uint64_t serial = 0;
  std::map<Digest, std::unique_ptr<Node>> next;  // by the digest of the answer to `ask`
};

struct Memo {
  std::mutex mu;
  Node root;
  size_t sequences = 0;
  bool given_up = false;
};

}  // namespace

struct CollectorMemo::Impl {
  std::mutex mu;
  std::unordered_map<std::string, std::unique_ptr<Memo>> memos;  // collector id + image reason
  Stats stats;
  uint64_t serials = 0;

  Memo& For(const std::string& key) {
    std::lock_guard lock(mu);
    auto& m = memos[key];
    if (!m) m = std::make_unique<Memo>();
    return *m;
  }
  void Count(size_t Stats::*field) {
    std::lock_guard lock(mu);
    ++(stats.*field);
  }
};

CollectorMemo::CollectorMemo() : impl_(std::make_unique<Impl>()) {}
CollectorMemo::~CollectorMemo() = default;

CollectorMemo::Stats CollectorMemo::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

core::Evidence CollectorMemo::Collect(const Collector& c, host::ReplayHost& replay,
                                      const std::function<core::Evidence(host::Host&)>& run, uint64_t* serial) {
  *serial = 0;
  // An image's bundle marks command evidence not taken: the same answers mean other evidence there.
  Memo& m = impl_->For(c.info.id + '\x1f' + replay.NotTakenReason());
  size_t mark = replay.MissCount();
  std::shared_ptr<const core::Evidence> known;
  {
    std::lock_guard lock(m.mu);
    // Ask the questions the collector asked on earlier nodes, in its order, while the answers
    // match one of theirs.
    const Node* n = m.given_up ? nullptr : &m.root;
    while (n && n->ask) {
      auto it = n->next.find(Ask(replay, *n->ask));
      n = it == n->next.end() ? nullptr : it->second.get();
    }
    if (n && n->evidence) {
      known = n->evidence;
      *serial = n->serial;
    }
  }
  if (known) {
    impl_->Count(&Stats::reused);
    return *known;
  }
  // Not known: the misses the walk met are the run's to record.
  replay.DropMissesFrom(mark);
  TracingHost tracing(replay);
  core::Evidence e = run(tracing);
  impl_->Count(&Stats::collected);
  std::lock_guard lock(m.mu);
  if (m.given_up) return e;
  Node* n = &m.root;
  bool diverged = false;
  for (const auto& [q, digest] : tracing.trace) {
    if (n->evidence) {
      diverged = true;  // it once stopped here and now asks more
      break;
    }
    if (!n->ask)
      n->ask = q;
    else if (!(*n->ask == q)) {
      diverged = true;  // the same answers so far, another question: not a function of its answers
      break;
    }
    auto& child = n->next[digest];
    if (!child) child = std::make_unique<Node>();
    n = child.get();
  }
  if (!diverged && n->ask) diverged = true;  // it once asked more after the same answers
  if (!diverged && !n->evidence) {
    n->evidence = std::make_shared<const core::Evidence>(e);
    ++m.sequences;
    {
      std::lock_guard ilock(impl_->mu);
      n->serial = *serial = ++impl_->serials;
    }
  }
  if (diverged || m.sequences > kGiveUpAfter) {
    *serial = 0;
    m.given_up = true;
    m.root = Node{};
    impl_->Count(&Stats::given_up);
  }
  return e;
}

}  // namespace clustermax::collect
