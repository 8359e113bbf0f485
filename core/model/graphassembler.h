#pragma once

// Internal to core/model: the op vocabulary the family builders assemble graphs from.

#include "core/model/modelgraph.h"
#include "core/model/modelloader.h"

#include <string>

namespace waferscope::core {

// Appends ops with their parameters, FLOPs and activation sizes computed from shapes. FLOP
// conventions: a K x N linear is 2KN forward and 4KN backward (delta and weight gradient) per
// token; attention core is 4 * keys * inner forward per token (QK^T and AV over all `keys`,
// the PaLM/MFU convention, causal masking not discounted) plus softmax; elementwise ops count
// a few FLOPs per element; every backward is twice its forward.
//
// A Census assembler runs the same builders without building the graph: it keeps only the op
// being assembled and counts, as each is done, what it will hold in the graph (the op, its
// names, its tensors and theirs, as glibc's heap blocks), so that footprint() is what finish()
// would return, measured in linear time and constant memory. An expert's tensors are counted
// from one expert for each length of its index. A tensor added to an op already counted
// (extraTensor) is counted as if that op had two tensors before; a tie (tieToEmbedding) to one
// keeps its tensors counted: the census errs on the high side only.
class GraphAssembler {
public:
    enum class Mode { Build, Census };
    explicit GraphAssembler(const ModelConfig& config, Mode mode = Mode::Build);

    // Where the following ops belong: stack, block index, and the tokens each op processes per
    // sample (sequence length of that stack).
    void setContext(Op::Stack stack, int layer, std::int64_t tokensPerSample);
    Op::Stack stack() const { return m_stack; }
    int layer() const { return m_layer; }

    // Whether the following ops' weights are frozen. Frozen weights also come from `freeze`
    // patterns (ModelConfig::freezePatterns) matched against every tensor name. A frozen op with
    // a trainable op before it passes gradients through (its backward computes input deltas, no
    // weight gradients); with none before it, it runs forward only (a DPO reference model, a
    // frozen vision tower). An op without weights follows the weighted op before it.
    void setFrozen(bool frozen);

    // The role of the next op appended (Op::role), which then goes back to Other:
    // `graph.as(OpRole::Query).linear(...)`.
    GraphAssembler& as(OpRole role);

    void embedding(const std::string& name, const std::string& tensor, std::int64_t rows, std::int64_t width,
        Op::Kind kind = Op::Kind::Embedding);
    // Patches of `patchInputs` values (channels x patch height x patch width) to `width`: a GEMM.
    void patchEmbedding(const std::string& name, const std::string& tensorPrefix, std::int64_t patchInputs,
        std::int64_t width, bool bias);
    void norm(const std::string& name, const std::string& tensorPrefix, std::int64_t width, ModelConfig::Norm type);
    void linear(const std::string& name, const std::string& tensorPrefix, std::int64_t in, std::int64_t out, bool bias,
        Op::Kind kind = Op::Kind::Linear);
    // `numExperts` FFNs of which `topK` run per token (shared experts: topK == numExperts).
    void experts(const std::string& name, const std::string& tensorPrefix, std::int64_t hidden, std::int64_t filter,
        std::int64_t numExperts, std::int64_t topK, bool gated, bool bias);
    // `extraFlopsPerScore`: work on each attention score besides the softmax (a soft cap).
    void attentionCore(const std::string& name, std::int64_t keysPerToken, std::int64_t heads, std::int64_t headDim,
        double extraFlopsPerScore = 0.0);
    void activation(const std::string& name, std::int64_t width, ModelConfig::Activation type);
    // A convolution of `taps` (k^d) over `channels` inputs to `out` outputs per voxel, as a GEMM.
    void convolution(const std::string& name, const std::string& tensorPrefix, std::int64_t channels, std::int64_t taps,
        std::int64_t out, bool bias);
    // Max pooling: one output per `window` inputs, `channels` wide.
    void pooling(const std::string& name, std::int64_t channels, std::int64_t window);
    // `extraFlopsPerLogit`: work on each logit before the softmax (a final soft cap).
    void loss(const std::string& name, std::int64_t classes, double extraFlopsPerLogit = 0.0);
    // The op `name` reuses another op's weights (tied LM head): its tensors are dropped, its
    // FLOPs stay.
    void tieToEmbedding(const std::string& name);
    // Adds a parameter tensor that belongs to no compute op of its own (T5 relative bias).
    void extraTensor(const std::string& name, const std::string& tensor, std::int64_t count);

    // Applies sparsity, byte sizes and optimizer state; returns the finished graph (Build).
    ModelGraph finish();
    // What the graph holds: its ops, tensors and heap bytes (Census).
    GraphFootprint footprint();

private:
    Op& append(std::string name, Op::Kind kind);
    void count(const Op& op); // Census: adds a finished op to m_census
    void countName(const std::string& name); // Census: a name's heap block, if it has one

    Mode m_mode = Mode::Build;
    GraphFootprint m_census; // Census: the ops counted so far (bytes without the ops' own array)

    const ModelConfig& m_config;
    std::vector<Op> m_ops;
    std::vector<std::int64_t> m_tokensPerSample; // per op, parallel to m_ops
    std::vector<bool> m_frozen; // per op, parallel to m_ops: frozen by setFrozen
    bool m_currentFrozen = false;
    OpRole m_nextRole = OpRole::Other;
    Op::Stack m_stack = Op::Stack::None;
    int m_layer = -1;
    std::int64_t m_tokens = 1;
    int m_activationBytes = 2; // bytes per activation element
};

} // namespace waferscope::core
