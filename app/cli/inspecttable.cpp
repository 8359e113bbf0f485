#include "app/cli/inspecttable.h"

#include "core/common/displaytext.h"
#include "core/common/units.h"
#include "core/model/graphjson.h"

#include <cstdio>
#include <map>

namespace waferscope::cli {

namespace {

using core::Op;

// Op name without its block prefix: "layers.3.attn.q" -> "attn.q".
std::string nameInBlock(const Op& op)
{
    const std::string marker = "layers." + std::to_string(op.layer) + ".";
    const std::size_t at = op.name.find(marker);
    return at == std::string::npos ? op.name : op.name.substr(0, at) + op.name.substr(at + marker.size());
}

// A block's signature: what makes two blocks identical for display.
std::string blockSignature(const std::vector<const Op*>& ops)
{
    std::string signature;
    for (const Op* op : ops)
        signature
            += nameInBlock(*op) + "/" + std::to_string(op->params) + "/" + std::to_string(op->nonzeroParams) + ";";
    return signature;
}

std::string row(const std::string& name, const std::string& kind, double params, double flops, double bytes)
{
    return core::formatText("  %-34s %-18s %12s %14s %12s\n", core::displayText(name).c_str(), kind.c_str(),
        params > 0 ? core::formatCount(params).c_str() : "-", flops > 0 ? core::formatSi(flops, "FLOP").c_str() : "-",
        bytes > 0 ? core::formatBytes(bytes).c_str() : "-");
}

} // namespace

std::string formatInspectTable(const core::ModelGraph& graph, bool allOps)
{
    const core::ModelConfig& c = graph.config;
    std::string text;
    char line[512];
    text += core::formatText("%s (%s, %s schema)  %s\n", core::displayText(c.name).c_str(), core::toString(c.family),
        core::toString(c.schema), core::displayText(c.fileName).c_str());
    std::snprintf(line, sizeof line,
        "  parameters %s (%s non-zero)   layers %lld   hidden %lld   sequence %lld   batch %lld   micro-batch %s\n",
        core::formatThousands(graph.totalParams).c_str(), core::formatThousands(graph.nonzeroParams).c_str(),
        static_cast<long long>(c.numLayers), static_cast<long long>(c.hiddenSize),
        static_cast<long long>(c.sequenceLength), static_cast<long long>(c.batchSize),
        c.microBatchSize > 0 ? std::to_string(c.microBatchSize).c_str() : "compiler's choice");
    text += line;
    std::snprintf(line, sizeof line,
        "  precision %s   weights %s   optimizer state %s   forward %s/token   backward %s/token\n\n",
        core::precisionName(c).c_str(), core::formatBytes(double(graph.weightBytes)).c_str(),
        core::formatBytes(double(graph.optimizerStateBytes)).c_str(),
        core::formatSi(graph.fwdFlopsPerToken, "FLOP").c_str(), core::formatSi(graph.bwdFlopsPerToken, "FLOP").c_str());
    text += line;
    std::snprintf(line, sizeof line, "  %-34s %-18s %12s %14s %12s\n", "op", "kind", "params", "fwd/token", "weights");
    text += line;

    for (std::size_t i = 0; i < graph.ops.size();) {
        const Op& op = graph.ops[i];
        if (op.layer < 0 || op.stack == core::Op::Stack::None || allOps) {
            text += row(
                op.name, core::toString(op.kind), double(op.params), op.fwdFlopsPerToken, double(op.weightBytes));
            ++i;
            continue;
        }
        // Gather a run of consecutive identical blocks of the same stack.
        auto blockAt = [&](std::size_t start, std::size_t& end) {
            std::vector<const Op*> ops;
            end = start;
            while (end < graph.ops.size() && graph.ops[end].layer == graph.ops[start].layer
                && graph.ops[end].stack == graph.ops[start].stack)
                ops.push_back(&graph.ops[end++]);
            return ops;
        };
        std::size_t end = 0;
        const std::vector<const Op*> first = blockAt(i, end);
        const std::string signature = blockSignature(first);
        int lastLayer = op.layer;
        std::size_t next = end;
        while (next < graph.ops.size() && graph.ops[next].layer == lastLayer + 1 && graph.ops[next].stack == op.stack) {
            std::size_t blockEnd = 0;
            if (blockSignature(blockAt(next, blockEnd)) != signature)
                break;
            ++lastLayer;
            next = blockEnd;
        }
        const std::string prefix
            = op.stack == core::Op::Stack::None ? std::string() : toString(op.stack) + std::string(" ");
        const int count = lastLayer - op.layer + 1;
        text += "  " + prefix + "blocks " + std::to_string(op.layer)
            + (count > 1 ? "-" + std::to_string(lastLayer) : "")
            + (count > 1 ? " (" + std::to_string(count) + " identical blocks, per block):" : ":") + "\n";
        for (const Op* blockOp : first)
            text += row("  " + nameInBlock(*blockOp), core::toString(blockOp->kind), double(blockOp->params),
                blockOp->fwdFlopsPerToken, double(blockOp->weightBytes));
        i = next;
    }
    return text;
}

} // namespace waferscope::cli
