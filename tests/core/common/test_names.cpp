// core/common/names and the other name tables: the names of modes, executions, bounds, layer and
// lane kinds, checkpoint strategies, mechanisms and kernels are a shipped contract (CLI options and
// --json, report.json and report.csv, the calibration file, the GUI's session); each is spelled here
// as docs/CLI.md and those files spell it, and every name reads back as its value.
#include "testing.h"

#include "core/cluster/scheduler.h"
#include "core/common/names.h"
#include "core/compiler/plan.h"
#include "core/engine/calibration.h"
#include "core/engine/engine.h"
#include "core/fabric/kernels.h"
#include "core/fabric/traffic.h"
#include "core/model/modelgraph.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace waferscope::core;

namespace {

template <typename Enum>
void checkTable(const std::vector<std::string>& contract)
{
    WS_CHECK(allNames<Enum>() == contract);
    for (const EnumName<Enum>& entry : nameTable<Enum>()) {
        WS_CHECK_EQ(std::string(toString(entry.value)), std::string(entry.name));
        WS_CHECK(fromName<Enum>(entry.name) == entry.value);
    }
    WS_CHECK(!fromName<Enum>("Inference").has_value()); // names are exact: no case folding
    WS_CHECK(!fromName<Enum>("weight streaming").has_value());
}

// A table of the sets added for issue 40: its names are `contract` in order, each value sits at
// its own index (what nameOf relies on), no name is written twice, and every name reads back as
// its value.
template <typename Enum>
void checkNames(const std::vector<std::string>& contract)
{
    WS_CHECK(allNames<Enum>() == contract);
    const auto table = nameTable<Enum>();
    std::set<std::string> seen;
    for (std::size_t i = 0; i < table.size(); ++i) {
        WS_CHECK_EQ(std::size_t(table[i].value), i);
        WS_CHECK(seen.insert(table[i].name).second);
        WS_CHECK_EQ(std::string(nameOf(table[i].value)), contract[i]);
        WS_CHECK(fromName<Enum>(contract[i]) == table[i].value);
    }
    if (std::find(contract.begin(), contract.end(), std::string()) == contract.end())
        WS_CHECK(!fromName<Enum>("").has_value());
    WS_CHECK(!fromName<Enum>("Linear").has_value()); // names are exact: no case folding
}

const std::vector<std::string> kOpKinds
    = { "embedding", "position_embedding", "norm", "linear", "attention_core", "activation", "moe_router", "experts",
          "lm_head", "pooler", "loss", "patch_embedding", "convolution", "pooling", "upsampling" };

} // namespace

WS_TEST(namesAreTheShippedStrings)
{
    checkTable<RunMode>({ "train", "eval", "inference" });
    checkTable<ExecutionChoice>({ "auto", "pipelined", "weight_streaming" });
    checkTable<ExecutionMode>({ "pipelined", "weight_streaming", "inference" });
    // "" is a region no layer ran on; "pipeline" a pipelined stage waiting for the slowest.
    checkTable<Bound>({ "", "compute", "fabric", "io", "latency", "memoryx", "pipeline", "swarmx" });
}

// Eval runs on a plan compiled as for training; `compile --mode` offers the two a plan has.
WS_TEST(anEvalRunCompilesAsTraining)
{
    WS_CHECK(compileModeFor(RunMode::Train) == RunMode::Train);
    WS_CHECK(compileModeFor(RunMode::Eval) == RunMode::Train);
    WS_CHECK(compileModeFor(RunMode::Inference) == RunMode::Inference);
    WS_CHECK(compileModeNames() == std::vector<std::string>({ "train", "inference" }));
    WS_CHECK(compileModeFromName("inference") == RunMode::Inference);
    WS_CHECK(!compileModeFromName("eval").has_value());
    WS_CHECK(!compileModeFromName("Train").has_value());
}

WS_TEST(choiceListsReadAsEnglish)
{
    WS_CHECK_EQ(choiceList(allNames<ExecutionChoice>()), std::string("auto, pipelined or weight_streaming"));
    WS_CHECK_EQ(choiceList({ "train" }), std::string("train"));
    WS_CHECK_EQ(choiceList({}), std::string());
}

// The sets that were strings or hand-written switches (issue 40): report.json and report.csv, the
// calibration file, `run --json`, `compile --json`, and `fabric`'s options spell them so.
WS_TEST(everyTableRoundTripsItsShippedNames)
{
    checkNames<CheckpointStrategy>({ "all_blocks", "every_k", "memoryx" });
    checkNames<KernelPlan::Kind>({ "gemv", "gemm_stream", "attention", "gather" });
    checkNames<engine::GemvReduction>({ "chain_reduced", "tree_reduced" });
    checkNames<engine::RegionSizing>({ "by_weights", "stacked" });
    checkNames<engine::SpeculativeDecoding>({ "off", "draft_model" });
    checkNames<engine::LaneKind>({ "memoryx", "swarmx", "csx_io", "csx", "region", "wafer_link" });
    checkNames<engine::Phase>({ "stream_in", "forward", "backward_delta", "backward_gradient", "gradient_out", "reduce",
        "optimizer_update", "prefill", "decode", "checkpoint_out", "checkpoint_in", "flash_stream_in" });
    checkNames<Op::Kind>(kOpKinds);
    std::vector<std::string> layerKinds = kOpKinds;
    layerKinds.insert(layerKinds.end(), { "wafer_link", "gradient_reduction" });
    checkNames<engine::LayerKind>(layerKinds);
    checkNames<fabric::KernelKind>(
        { "gemv", "gemm_stream", "row_broadcast", "column_broadcast", "row_reduce", "column_reduce", "gemv_tree" });
    checkNames<fabric::TrafficPattern>({ "uniform", "transpose", "hotspot" });
    // `inspect --json`'s "stack", "family" and "schema"; the cluster's --policy and cluster.json.
    checkNames<Op::Stack>({ "", "decoder", "encoder", "reference", "projector", "question_encoder", "context_encoder",
        "teacher", "student", "image_model" });
    checkNames<ModelConfig::Family>({ "gpt2", "gpt3", "gptj", "falcon", "bloom", "btlm", "jais", "starcoder",
        "santacoder", "gemma2", "mpt", "llama", "mixtral", "bert", "bert/classifier", "bert/token_classifier",
        "bert/extractive_summarization", "bert/qa", "esm2", "dpr", "dpo", "t5", "transformer", "layers_api_demo",
        "fc_mnist", "vision_transformer", "dino", "dit", "llava", "multimodal_simple", "unet", "linformer" });
    checkNames<ModelConfig::Schema>({ "legacy", "trainer", "tf_weight_streaming" });
    checkNames<cluster::Policy>({ "fifo", "backfill" });
}

// The functions callers already used read the same tables.
WS_TEST(namedFunctionsReadTheTables)
{
    WS_CHECK_EQ(std::string(toString(CheckpointStrategy::EveryK)), std::string("every_k"));
    WS_CHECK_EQ(std::string(toString(KernelPlan::Kind::StreamedGemm)), std::string("gemm_stream"));
    WS_CHECK_EQ(std::string(engine::toString(engine::LaneKind::CsxIo)), std::string("csx_io"));
    WS_CHECK_EQ(std::string(engine::toString(engine::Phase::FlashStreamIn)), std::string("flash_stream_in"));
    WS_CHECK_EQ(std::string(engine::toString(engine::LayerKind::GradientReduction)), std::string("gradient_reduction"));
    WS_CHECK_EQ(std::string(toString(Op::Kind::AttentionCore)), std::string("attention_core"));
    for (const EnumName<Op::Kind>& op : nameTable<Op::Kind>()) // an op's layer is named as the op's kind
        WS_CHECK_EQ(std::string(engine::toString(engine::layerKindOf(op.value))), std::string(op.name));
    WS_CHECK_EQ(std::string(fabric::kernelName(fabric::KernelKind::GemvTree)), std::string("gemv_tree"));
    WS_CHECK(fabric::parseKernel("row_reduce") == fabric::KernelKind::RowReduce);
    WS_CHECK(!fabric::parseKernel("gemm").has_value());
    WS_CHECK_EQ(fabric::kernelNames(),
        std::string("gemv|gemm_stream|row_broadcast|column_broadcast|row_reduce|column_reduce|gemv_tree"));
    WS_CHECK_EQ(std::string(fabric::trafficPatternName(fabric::TrafficPattern::Hotspot)), std::string("hotspot"));
    WS_CHECK(fabric::parseTrafficPattern("transpose") == fabric::TrafficPattern::Transpose);
    WS_CHECK(!fabric::parseTrafficPattern("Uniform").has_value());
}
