// `bench train`: a real training run launched through Slurm from a recipe, read as it goes. The
// pure parts live here: recipes (data/train/recipes.json, embedded, or the user's file), the
// model FLOPs per token from a shape, the log readers (our built-in script's CMAX-TRAIN lines,
// torchtitan's and Megatron-LM's step lines), and the summary: tokens/s and TFLOP/s per GPU, MFU
// against the dense peak and MAMFU against the measured MAMF, the loss curve, step-time spread,
// the slowest rank, and the determinism fingerprint that names a rank (and node) computing
// differently from its peers. cli/bench_train.cc launches and watches the run.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/grade.h"

namespace clustermax::bench::train {

// A transformer's shape, from which the model FLOPs per token follow.
struct Shape {
  int layers = 0, dim = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0;
  int mlp_matrices = 2;  // 2: up, down (GELU); 3: gate, up, down (SwiGLU, Llama)
};
// Parameters that are not the token embedding (attention with grouped KV heads, the MLP, norms,
// the final norm and the output head), as torchtitan counts them for its FLOPs.
double NonEmbeddingParams(const Shape& s);
// Training FLOPs per token: 6 N (forward and backward of every weight) + 12 L d T (attention's
// scores and values, as PaLM's appendix and torchtitan's get_num_flop_per_token count them).
double FlopsPerToken(const Shape& s, int seq_len);

struct Recipe {
  std::string name, description;
  std::vector<std::string> command;  // argv; {python} {script} {seq} {batch} {steps} {seed} and shape fields replaced
  std::string log_format = "clustermax";  // clustermax | torchtitan | megatron
  std::optional<Shape> shape;
  double flops_per_token = 0;  // given, or from the shape
  int seq_len = 0;
  int micro_batch = 0;                          // sequences per rank per step
  std::string precision = "bf16";               // the dense peak MFU is taken against (fp32 on CPU)
  std::vector<std::string> deterministic_args;  // appended with --deterministic
  std::vector<std::string> peak_args;           // appended on CPU recipes: the script measures its matmul peak
  std::string container_image;                  // run through pyxis (srun --container-image)
  std::string device = "gpu";  // "cpu": no GPUs asked for, one task per node, the peak measured by the ranks
};
// The embedded recipes (data/train/recipes.json).
const nlohmann::json& EmbeddedRecipes();
// A recipe by name from `catalog`, or read from a JSON document; throws naming what is wrong.
Recipe RecipeFromJson(const nlohmann::json& j);
std::vector<std::string> RecipeNames(const nlohmann::json& catalog);
// The built-in training script (data/train/clustermax_train.py, embedded).
const std::string& BuiltinScript();
// The command with its placeholders replaced; throws on an unknown placeholder.
std::vector<std::string> ExpandCommand(const Recipe& r, const std::map<std::string, std::string>& values);

// One line of a training log, read. srun --label's "N: " prefix gives the rank (else torchrun's
// "[rankN]:"); ANSI colour escapes are ignored.
struct Event {
  std::string kind;  // start, step, end, error, peak
  int rank = -1;
  int step = 0;
  std::optional<double> loss, step_s, compute_s, tokens, tps, tflops, mfu;  // mfu as a fraction
  std::string loss_hex;  // the exact loss (our script): the determinism fingerprint
  nlohmann::json raw;    // our script's object as printed
};
// nullopt: not a line of `format`'s step log.
std::optional<Event> ParseLogLine(std::string_view line, const std::string& format);

// Everything read from a run's log so far, summarised.
class LogReader {
 public:
  explicit LogReader(std::string format) : format_(std::move(format)) {}
  // Feeds one line; true when it was a step (progress, for the watchdog).
  bool Feed(std::string_view line);
  int last_step() const { return last_step_; }
  size_t tasks_seen() const { return tasks_.size(); }
  size_t lines() const { return lines_; }
  // {"format", "lines", "steps": [{step, rank, loss, ...}], "starts"/"ends"/"peaks": {rank: {...}},
  // "tasks": {rank: node}, "job", "gpu", "errors": [...]}
  nlohmann::json Collected() const;

 private:
  std::string format_;
  int last_step_ = 0;
  size_t lines_ = 0;
  std::map<int, nlohmann::json> starts_, ends_, peaks_;
  std::map<int, std::string> tasks_;            // rank -> node, from the launcher's "task" lines
  std::string job_, gpu_;                       // the Slurm job and the GPU model they named
  std::map<std::pair<int, int>, Event> steps_;  // (step, rank)
  std::vector<std::string> errors_;
};

struct SummaryInputs {
  double flops_per_token = 0;
  int warmup_steps = 1;    // excluded from the rates
  double peak_tflops = 0;  // dense peak per GPU of the precision (0: none known)
  std::string peak_source;
  double mamf_tflops = 0;  // measured MAMF per GPU (0: none)
  std::string mamf_source;
  std::map<int, std::string> rank_nodes;  // rank -> node (from srun's task layout)
  bool deterministic = false;             // every rank computed the same batches: compare their losses
};
// The run's figures from what the reader collected. On CPU ranks (no GPU named) without a given
// peak, the ranks' measured matmul peak ("peak" events) is the peak and the MAMF.
nlohmann::json Summarize(const nlohmann::json& collected, const SummaryInputs& in);

std::vector<MetricValue> TrainMetrics(const nlohmann::json& result);
std::string RenderTrain(const nlohmann::json& result);

}  // namespace clustermax::bench::train
