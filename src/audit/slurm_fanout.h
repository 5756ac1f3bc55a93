// Fleet collection through Slurm itself (no agent, daemon or ssh loop): one job step runs
// `clustermax collect --role compute` on every node in scope (srun --ntasks-per-node=1, inside the
// caller's allocation with --overlap, or asking for one), each task prints its evidence bundle as
// short self-describing lines on stdout, and srun forwards them here. Nodes that are down, drained,
// not responding, busy or silent are reported with the reason; whatever the others returned is kept.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "audit/engine.h"
#include "host/bundle.h"
#include "host/host.h"

namespace clustermax::audit {

struct SlurmFanOutOptions {
  std::string partition;          // --partition
  std::string nodelist;           // --nodelist (Slurm hostlist)
  int nodes = 0;                  // at most this many nodes (0: every node in scope)
  std::string time_limit = "10";  // srun --time (minutes) when asking for an allocation
  double timeout_s = 300;         // the whole step; srun is killed after it, and what arrived is kept
  double immediate_s = 30;        // outside an allocation: give up if the nodes are not granted within this
  std::string bcast;              // non-empty: srun --bcast=PATH (copy the binary to the nodes first)
  int tasks_per_node = 1;         // RunFramedStep: tasks per node (bench net: one per rank)
  std::string mpi;                // RunFramedStep: srun --mpi=VALUE (bench net: pmix); empty: the site's default
  std::string jobid;  // RunFramedStep: a step of this job (srun --jobid=ID --overlap), as inside an allocation
  std::function<bool()> stop_when;        // RunFramedStep: polled while srun runs; true stops it (Ctrl-C)
  std::string self_exe;                   // path of this binary as the nodes see it
  std::vector<std::string> collect_args;  // selection passed to `collect` (target, profiles, checks, probes, timeouts)
};

struct FanOutResult {
  std::vector<host::Bundle> bundles;         // one per node that answered (manifest.role "compute")
  std::vector<UnreachableNode> unreachable;  // in scope, no bundle, with the reason
  std::vector<std::string> in_scope;         // every node asked for, in order
  std::vector<std::string> srun_argv;
  std::string srun_error;  // srun's stderr (trimmed) when it failed
  bool inside_allocation = false;
  int gpus_per_node = 0;  // GPUs the step requested per node
  size_t strangers = 0;   // documents under names that are not nodes of the step (ignored)
  double seconds = 0;
  std::vector<std::string> notes;  // for the operator: what was created and removed (Kubernetes)

  // The unreachable nodes in the order of the scope (nodes not in it last), as both fan-outs report.
  void SortUnreachableByScope();
};

// The nodes a fleet step can run on now: sinfo once over the scope (partition, nodelist, or the
// caller's allocation); down, drained, not-responding and (outside an allocation) busy nodes are
// listed as unreachable with the reason; at most `nodes` targets.
struct NodeScope {
  std::vector<std::string> targets;   // schedulable now, in sinfo's order
  std::vector<std::string> in_scope;  // every node asked for
  std::vector<UnreachableNode> unreachable;
  bool inside_allocation = false;
  int gpus_per_node = 0;  // the fewest GPUs (GRES) among the targets
};
NodeScope SelectNodes(host::Host& login, const SlurmFanOutOptions& o);

// One srun step, one task per node of `nodes`, each running `self_exe program...` and printing its
// document as framed lines (util/line_frames.h) under `marker`, keyed by its Slurm node name.
// srun's output is read as it comes and never held whole: each document is handed to `on_document`
// (on the thread reading srun's output) the moment its last part arrived, or, without a sink, kept
// in `documents`. A document under a key that is not a node of the step is ignored and counted.
struct FramedStep {
  std::map<std::string, std::string> documents;  // node -> document (without a sink)
  std::map<std::string, std::string> missing;    // node of `nodes` without a document -> why
  std::vector<std::string> argv;
  std::string srun_error;  // srun's stderr (trimmed) when it failed
  size_t strangers = 0;    // documents from keys that are not nodes of the step
  double seconds = 0;
};
using DocumentSink = std::function<void(const std::string& node, std::string document)>;
FramedStep RunFramedStep(host::Host& login, const NodeScope& scope, const std::vector<std::string>& nodes,
                         const SlurmFanOutOptions& o, const std::string& job_name,
                         const std::vector<std::string>& program, const std::string& marker, int gpus_per_node,
                         const DocumentSink& on_document = {});

// The line format of a bundle on stdout: "CLUSTERMAX-BUNDLE <node> <index> <count> <chunk>", the
// document cut into chunks short enough that no line is ever split in transit. The document is
// "z1:" and the base64 of the bundle's JSON deflated (util/compress.h); a document that is JSON
// itself (from an older node binary) is read as well.
std::vector<std::string> BundleLines(const std::string& node, const host::Bundle& bundle);
// A received document's JSON text: inflated when deflated (at most util::kMaxDocumentBytes), as
// it came otherwise. Throws std::runtime_error naming what is wrong.
std::string BundleText(std::string document);
// The framed documents in any mix of lines, by key (a node's name); incomplete ones in `errors`.
std::map<std::string, std::string> BundleDocuments(std::string_view text, std::map<std::string, std::string>& errors);
// Reassembles bundles from any mix of lines (other output, and srun's "N: " labels, are ignored).
// Incomplete or corrupt bundles are reported in `errors` as node -> reason.
std::vector<host::Bundle> ParseBundleLines(const std::string& text, std::map<std::string, std::string>& errors);

// A node's document (as framed) read into its bundle and the text a run directory keeps: the
// document as sent, or the bundle written anew where its manifest had to be set right (its host
// name is always `node`, the scheduler's name for where it ran; its role "compute"). False, with the reason in `error`,
// when it cannot be read.
bool ReadNodeDocument(const std::string& node, std::string document, host::Bundle& bundle, std::string& text,
                      std::string& error);

// The fleet's bundles as they arrive: `on_targets` is told the nodes the step runs on (sorted by
// name; a node's index is its place there) before it starts; each node's bundle is read on one of
// `workers` threads (at most twice as many waiting) and handed to `on_bundle` there, concurrently,
// then dropped, with its text: the document as the node sent it (byte-exact evidence, what a run
// directory keeps), or the bundle written anew where its manifest had to be completed (no host
// name, or not marked a compute node). A bundle that cannot be read makes its node unreachable
// with the reason. The result's `bundles` stays empty.
struct BundleStream {
  std::function<void(const std::vector<std::string>& targets)> on_targets;
  std::function<void(size_t index, host::Bundle bundle, const std::string& text)> on_bundle;
  unsigned workers = 1;
};
FanOutResult FanOutThroughSlurm(host::Host& login, const SlurmFanOutOptions& o, const BundleStream& stream);
// Every bundle kept in `bundles`, in the order of the nodes' names.
FanOutResult FanOutThroughSlurm(host::Host& login, const SlurmFanOutOptions& o);

}  // namespace clustermax::audit
