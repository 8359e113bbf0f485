// Op roles (issue 40): every op's role is set by the builder that appends it, so that the
// compiler and the decode kernels choose by type, never by name. Checked against the Model Zoo
// naming the builders follow (a table written here, suffix by suffix), over the samples, the
// families with cross-attention, a DPO reference copy and a vision tower, and by what the decode
// layout then covers.
#include "testing.h"

#include "core/compiler/compiler.h"
#include "core/compiler/decodelayout.h"
#include "core/compiler/decoderegions.h"
#include "core/hardware/builtinpresets.h"
#include "core/kernels/kernelspec.h"
#include "core/model/modelloader.h"

#include <filesystem>
#include <map>
#include <set>
#include <string>

using namespace waferscope;
using namespace waferscope::core;
namespace fs = std::filesystem;

namespace {

// The role an op's name says it has in the Model Zoo's naming, or Other.
OpRole roleFromName(const std::string& name)
{
    static const std::pair<const char*, OpRole> kSuffixes[] = { { ".attn.q", OpRole::Query },
        { ".attn.k", OpRole::Key }, { ".attn.v", OpRole::Value }, { ".attn.q_norm", OpRole::QueryNorm },
        { ".attn.k_norm", OpRole::KeyNorm }, { ".attn.core", OpRole::AttentionCore },
        { ".attn.out", OpRole::AttentionOut }, { ".cross.q", OpRole::CrossQuery }, { ".cross.k", OpRole::CrossKey },
        { ".cross.v", OpRole::CrossValue }, { ".cross.core", OpRole::CrossAttentionCore },
        { ".cross.out", OpRole::CrossAttentionOut }, { ".ffn.up", OpRole::Up }, { ".ffn.gate", OpRole::Gate },
        { ".ffn.act", OpRole::Activation }, { ".ffn.down", OpRole::Down }, { ".ffn.router", OpRole::Router },
        { ".ffn.experts", OpRole::Experts }, { ".ffn.shared_experts", OpRole::SharedExperts } };
    for (const auto& [suffix, role] : kSuffixes)
        if (name.ends_with(suffix))
            return role;
    if (name == "embedding" || name.ends_with(".embedding"))
        return OpRole::Embedding;
    if (name == "lm_head" || name.ends_with(".lm_head"))
        return OpRole::LmHead;
    return OpRole::Other;
}

ModelGraph load(const std::string& path)
{
    Expected<ModelGraph> graph = loadModel(path);
    if (!graph)
        throw std::runtime_error(graph.error().format());
    return std::move(graph).value();
}

} // namespace

WS_TEST(everyRoleHasOneNameInTheTable)
{
    std::set<std::string> names;
    for (const EnumName<OpRole>& entry : nameTable<OpRole>()) {
        WS_CHECK(names.insert(entry.name).second);
        WS_CHECK_EQ(std::string(toString(entry.value)), std::string(entry.name));
        WS_CHECK(fromName<OpRole>(entry.name) == entry.value);
    }
    WS_CHECK_EQ(names.size(), std::size_t(OpRole::LmHead) + 1);
    // The region kernels' names, which report.json and cycle_vs_model.csv spell.
    const std::set<std::string> kernels { "embedding", "norm+gemv", "gemv", "attention", "experts", "lm_head" };
    std::set<std::string> named;
    for (const EnumName<RegionKernelKind>& entry : nameTable<RegionKernelKind>()) {
        named.insert(entry.name);
        WS_CHECK(fromName<RegionKernelKind>(toString(entry.value)) == entry.value);
    }
    WS_CHECK(named == kernels);
}

WS_TEST(theBuildersGiveEveryBlockPartItsRole)
{
    const fs::path samples = fs::path(test::sourceDir()) / "samples";
    int checked = 0;
    for (const char* file : { "gpt2_small.yaml", "gpt3_xl.yaml", "llama3p2_1b.yaml", "llama3_8b.yaml" }) {
        const ModelGraph graph = load((samples / file).string());
        std::map<int, std::multiset<OpRole>> byLayer;
        for (const Op& op : graph.ops) {
            const OpRole named = roleFromName(op.name);
            if (named != OpRole::Other || (op.layer >= 0 && op.kind != Op::Kind::Norm))
                WS_CHECK_EQ(std::string(toString(op.role)), std::string(toString(named)));
            byLayer[op.layer].insert(op.role);
        }
        const bool gated = graph.config.activation == ModelConfig::Activation::SwiGlu;
        for (int layer = 0; layer < int(graph.config.numLayers); ++layer) {
            const std::multiset<OpRole>& roles = byLayer[layer];
            for (const OpRole role :
                { OpRole::AttentionNorm, OpRole::Query, OpRole::Key, OpRole::Value, OpRole::AttentionCore,
                    OpRole::AttentionOut, OpRole::FfnNorm, OpRole::Up, OpRole::Activation, OpRole::Down })
                WS_CHECK_EQ(roles.count(role), std::size_t(1));
            WS_CHECK_EQ(roles.count(OpRole::Gate), std::size_t(gated ? 1 : 0));
            ++checked;
        }
        // Outside the blocks: one embedding, one final norm, one head.
        for (const OpRole role : { OpRole::Embedding, OpRole::FinalNorm, OpRole::LmHead })
            WS_CHECK_EQ(byLayer[-1].count(role), std::size_t(1));
    }
    WS_CHECK_EQ(checked, 12 + 24 + 16 + 32); // GPT-2 small, GPT-3 XL, Llama 3.2 1B, Llama 3 8B
}

WS_TEST(crossAttentionReferenceCopiesAndVisionTowersKeepTheirOwnRoles)
{
    const std::string zoo = test::sharedDir() + "/modelzoo-release-2.10.0/";
    // T5: the decoder's cross-attention has the cross roles, its self-attention the plain ones.
    const ModelGraph t5 = load(zoo + "nlp/t5/configs/t5_3B.yaml");
    int cross = 0;
    for (const Op& op : t5.ops) {
        WS_CHECK_EQ(std::string(toString(op.role)), std::string(toString(roleFromName(op.name))));
        cross += op.role == OpRole::CrossQuery ? 1 : 0;
    }
    WS_CHECK_EQ(cross, int(t5.config.decoderLayers));
    WS_CHECK(!hasDecodeLayout(t5));
    // DPO: the frozen reference copy's ops have roles too, in a stack of their own that does not decode.
    const ModelGraph dpo = load(zoo + "nlp/dpo/configs/params_zephyr_7b_dpo.yaml");
    int referenceQueries = 0;
    int decodedQueries = 0;
    for (const Op& op : dpo.ops) {
        if (op.role != OpRole::Query)
            continue;
        (op.stack == Op::Stack::Reference ? referenceQueries : decodedQueries) += 1;
        WS_CHECK_EQ(inDecodedStack(op), op.stack != Op::Stack::Reference);
    }
    WS_CHECK_EQ(referenceQueries, int(dpo.config.numLayers));
    WS_CHECK_EQ(decodedQueries, int(dpo.config.numLayers));
    WS_CHECK(hasDecodeLayout(dpo));
}

WS_TEST(theDecodeLayoutCoversTheLanguageModelOfAMultimodalModel)
{
    // LLaVA's text model decodes like any decoder (its op names carry a "text_model." prefix,
    // which the layout once mistook for no language model at all); its vision tower does not.
    const ModelGraph llava = load(test::dataDir() + "/families/llava_tiny.yaml");
    CompileOptions options;
    options.mode = RunMode::Inference;
    const SystemSpec cs3 = loadBuiltinPreset("cs3").value();
    const Expected<ExecutionPlan> plan = compile(llava, cs3, options);
    WS_REQUIRE(plan.hasValue());
    const DecodeRegions regions(llava, *plan, cs3);
    WS_CHECK(regions.hiddenLanes(0) >= 1);
    int costed = 0;
    for (const Region& region : plan->regions) {
        const Op& op = llava.ops[std::size_t(region.op)];
        const bool decodes = region.replica == 0 && inDecodedStack(op)
            && (region.role == OpRole::Query || region.role == OpRole::AttentionCore || region.role == OpRole::Down);
        if (decodes) {
            WS_CHECK(regions.cost(region, 16).has_value());
            ++costed;
        }
        if (!inDecodedStack(op))
            WS_CHECK(!regions.cost(region, 16).has_value());
    }
    WS_CHECK_EQ(costed, 3 * int(llava.config.parts.back().config.front().numLayers));
}
