#include "core/model/graphassembler.h"

#include "core/common/memorybudget.h"
#include "core/model/namepattern.h"

#include <algorithm>
#include <bit>
#include <fnmatch.h>
#include <utility>

namespace waferscope::core {

namespace {

double normFlopsPerElement(ModelConfig::Norm type)
{
    return type == ModelConfig::Norm::RmsNorm ? 4.0 : 5.0;
}

bool hasScale(ModelConfig::Norm type)
{
    return type != ModelConfig::Norm::NonParametric;
}

bool hasBias(ModelConfig::Norm type)
{
    return type == ModelConfig::Norm::LayerNorm;
}

double activationFlopsPerElement(ModelConfig::Activation type)
{
    switch (type) {
    case ModelConfig::Activation::Relu:
        return 1.0;
    case ModelConfig::Activation::ReGlu:
        return 2.0;
    case ModelConfig::Activation::Silu:
    case ModelConfig::Activation::Tanh:
        return 4.0;
    case ModelConfig::Activation::SwiGlu:
        return 5.0; // silu + gate multiply
    case ModelConfig::Activation::GeGlu:
        return 9.0;
    case ModelConfig::Activation::Gelu:
        return 8.0; // tanh approximation
    }
    return 8.0;
}

bool isGated(ModelConfig::Activation type)
{
    return type == ModelConfig::Activation::SwiGlu || type == ModelConfig::Activation::GeGlu
        || type == ModelConfig::Activation::ReGlu;
}

// Optimizer state bytes for one tensor (master weights when mixed precision, plus moments).
std::int64_t optimizerBytes(const ModelConfig& config, const ParamTensor& tensor, std::int64_t rows)
{
    const std::int64_t master = config.mixedPrecision ? 4 : 0;
    switch (config.optimizer) {
    case ModelConfig::Optimizer::Sgd:
        return tensor.count * (master + (config.optimizerMomentum ? 4 : 0));
    case ModelConfig::Optimizer::AdaFactor: {
        // Factored second moment: one row and one column vector per matrix.
        const std::int64_t factored = tensor.isMatrix && rows > 0 ? (rows + tensor.count / rows) * 4 : tensor.count * 4;
        return tensor.count * master + factored;
    }
    default:
        return tensor.count * (master + 8); // Adam, AdamW, LAMB: two fp32 moments
    }
}

// Backward work of a frozen op: no weight gradient (half a weighted op's backward, which is
// delta plus weight gradient), and nothing at all with no trainable op before it.
void applyFrozen(Op& op, bool trainableBefore)
{
    op.frozen = true;
    if (!trainableBefore)
        op.bwdFlopsPerToken = 0.0;
    else if (!op.tensors.empty() && op.tensors.front().isMatrix)
        op.bwdFlopsPerToken *= 0.5;
}

bool matchesAny(const std::vector<NamePattern>& patterns, const std::string& name)
{
    return std::any_of(
        patterns.begin(), patterns.end(), [&](const NamePattern& pattern) { return pattern.search(name); });
}

} // namespace

GraphAssembler::GraphAssembler(const ModelConfig& config, Mode mode)
    : m_mode(mode)
    , m_config(config)
    , m_activationBytes(config.mixedPrecision ? 2 : 4)
{
}

void GraphAssembler::countName(const std::string& name)
{
    if (name.capacity() > 15) // libstdc++ keeps shorter strings inside the object
        m_census.bytes += heapBlockBytes(double(name.capacity() + 1));
}

void GraphAssembler::count(const Op& op)
{
    ++m_census.ops;
    m_census.tensors += std::int64_t(op.tensors.size());
    countName(op.name);
    if (op.tensors.capacity() > 0)
        m_census.bytes += heapBlockBytes(double(op.tensors.capacity() * sizeof(ParamTensor)));
    for (const ParamTensor& tensor : op.tensors)
        countName(tensor.name);
}

GraphFootprint GraphAssembler::footprint()
{
    for (const Op& op : m_ops)
        count(op);
    m_ops.clear();
    GraphFootprint footprint = m_census;
    // The ops' array, grown by doubling as they were appended.
    if (footprint.ops > 0)
        footprint.bytes += heapBlockBytes(double(std::bit_ceil(std::uint64_t(footprint.ops)) * sizeof(Op)));
    return footprint;
}

void GraphAssembler::setContext(Op::Stack stack, int layer, std::int64_t tokensPerSample)
{
    m_stack = stack;
    m_layer = layer;
    m_tokens = tokensPerSample;
}

void GraphAssembler::setFrozen(bool frozen)
{
    m_currentFrozen = frozen;
}

GraphAssembler& GraphAssembler::as(OpRole role)
{
    m_nextRole = role;
    return *this;
}

Op& GraphAssembler::append(std::string name, Op::Kind kind)
{
    if (m_mode == Mode::Census) { // the previous op is finished: counted, then dropped
        for (const Op& done : m_ops)
            count(done);
        m_ops.clear();
    }
    Op op;
    op.name = std::move(name);
    op.kind = kind;
    op.role = std::exchange(m_nextRole, OpRole::Other);
    op.layer = m_layer;
    op.stack = m_stack;
    m_ops.push_back(std::move(op));
    if (m_mode == Mode::Build) {
        m_tokensPerSample.push_back(m_tokens);
        m_frozen.push_back(m_currentFrozen);
    }
    return m_ops.back();
}

void GraphAssembler::embedding(
    const std::string& name, const std::string& tensor, std::int64_t rows, std::int64_t width, Op::Kind kind)
{
    Op& op = append(name, kind);
    op.inFeatures = rows;
    op.outFeatures = width;
    op.tensors.push_back({ tensor, rows * width, false, 0.0 });
    op.fwdFlopsPerToken = kind == Op::Kind::Embedding ? 0.0 : double(width); // lookup; positions are added
    op.bwdFlopsPerToken = double(width); // gradient rows accumulated
    op.activationBytesPerToken = width * m_activationBytes;
}

void GraphAssembler::patchEmbedding(
    const std::string& name, const std::string& tensorPrefix, std::int64_t patchInputs, std::int64_t width, bool bias)
{
    linear(name, tensorPrefix, patchInputs, width, bias, Op::Kind::PatchEmbedding);
}

void GraphAssembler::norm(
    const std::string& name, const std::string& tensorPrefix, std::int64_t width, ModelConfig::Norm type)
{
    Op& op = append(name, Op::Kind::Norm);
    op.inFeatures = op.outFeatures = width;
    if (hasScale(type))
        op.tensors.push_back({ tensorPrefix + ".weight", width, false, 0.0 });
    if (hasBias(type))
        op.tensors.push_back({ tensorPrefix + ".bias", width, false, 0.0 });
    op.fwdFlopsPerToken = normFlopsPerElement(type) * double(width);
    op.bwdFlopsPerToken = 2.0 * op.fwdFlopsPerToken;
    op.activationBytesPerToken = width * m_activationBytes;
}

void GraphAssembler::linear(const std::string& name, const std::string& tensorPrefix, std::int64_t in, std::int64_t out,
    bool bias, Op::Kind kind)
{
    Op& op = append(name, kind);
    op.inFeatures = in;
    op.outFeatures = out;
    op.tensors.push_back({ tensorPrefix + ".weight", in * out, true, 0.0 });
    if (bias)
        op.tensors.push_back({ tensorPrefix + ".bias", out, false, 0.0 });
    op.fwdFlopsPerToken = 2.0 * double(in) * double(out) + (bias ? double(out) : 0.0);
    op.bwdFlopsPerToken = 2.0 * op.fwdFlopsPerToken;
    op.activationBytesPerToken = out * m_activationBytes;
}

void GraphAssembler::experts(const std::string& name, const std::string& tensorPrefix, std::int64_t hidden,
    std::int64_t filter, std::int64_t numExperts, std::int64_t topK, bool gated, bool bias)
{
    Op& op = append(name, Op::Kind::Experts);
    op.inFeatures = hidden;
    op.outFeatures = hidden;
    const auto expertTensors = [&](std::int64_t e) {
        const std::string prefix = tensorPrefix + "." + std::to_string(e) + ".ffn.";
        std::vector<ParamTensor> tensors;
        tensors.push_back({ prefix + "0.linear_layer.weight", hidden * filter, true, 0.0 });
        if (bias)
            tensors.push_back({ prefix + "0.linear_layer.bias", filter, false, 0.0 });
        if (gated)
            tensors.push_back({ prefix + "0.linear_layer_for_glu.weight", hidden * filter, true, 0.0 });
        if (gated && bias)
            tensors.push_back({ prefix + "0.linear_layer_for_glu.bias", filter, false, 0.0 });
        tensors.push_back({ prefix + "1.linear_layer.weight", filter * hidden, true, 0.0 });
        if (bias)
            tensors.push_back({ prefix + "1.linear_layer.bias", hidden, false, 0.0 });
        return tensors;
    };
    const auto perExpert = std::int64_t(expertTensors(0).size());
    if (m_mode == Mode::Build) {
        op.tensors.reserve(std::size_t(numExperts * perExpert));
        for (std::int64_t e = 0; e < numExperts; ++e)
            for (ParamTensor& tensor : expertTensors(e))
                op.tensors.push_back(std::move(tensor));
    } else if (numExperts > 0) {
        // The names differ only in the expert's index: the experts with as many digits have
        // names as long (and as large) as the first of them.
        m_census.tensors += numExperts * perExpert;
        m_census.bytes += heapBlockBytes(double(numExperts * perExpert) * sizeof(ParamTensor));
        for (std::int64_t first = 0, next = 10; first < numExperts; first = next, next *= 10) {
            const std::int64_t alike = std::min(next, numExperts) - first;
            for (const ParamTensor& tensor : expertTensors(first))
                if (tensor.name.capacity() > 15)
                    m_census.bytes += double(alike) * heapBlockBytes(double(tensor.name.capacity() + 1));
        }
    }
    const double matricesPerExpert = gated ? 3.0 : 2.0;
    const double biasFlops = bias ? (gated ? 2.0 : 1.0) * double(filter) + double(hidden) : 0.0;
    op.fwdFlopsPerToken = double(topK)
        * (2.0 * matricesPerExpert * double(hidden) * double(filter)
            + activationFlopsPerElement(m_config.activation) * double(filter) + biasFlops);
    op.bwdFlopsPerToken = 2.0 * op.fwdFlopsPerToken;
    op.activationBytesPerToken = topK * (filter + hidden) * m_activationBytes;
}

void GraphAssembler::attentionCore(const std::string& name, std::int64_t keysPerToken, std::int64_t heads,
    std::int64_t headDim, double extraFlopsPerScore)
{
    Op& op = append(name, Op::Kind::AttentionCore);
    op.inFeatures = op.outFeatures = heads * headDim;
    const double keys = double(keysPerToken);
    op.fwdFlopsPerToken = 4.0 * keys * double(heads * headDim) + (5.0 + extraFlopsPerScore) * keys * double(heads);
    op.bwdFlopsPerToken = 2.0 * op.fwdFlopsPerToken;
    op.activationBytesPerToken = heads * headDim * m_activationBytes;
}

void GraphAssembler::activation(const std::string& name, std::int64_t width, ModelConfig::Activation type)
{
    Op& op = append(name, Op::Kind::Activation);
    op.inFeatures = isGated(type) ? 2 * width : width;
    op.outFeatures = width;
    op.fwdFlopsPerToken = activationFlopsPerElement(type) * double(width);
    op.bwdFlopsPerToken = 2.0 * op.fwdFlopsPerToken;
    op.activationBytesPerToken = width * m_activationBytes;
}

void GraphAssembler::convolution(const std::string& name, const std::string& tensorPrefix, std::int64_t channels,
    std::int64_t taps, std::int64_t out, bool bias)
{
    linear(name, tensorPrefix, channels * taps, out, bias, Op::Kind::Convolution);
    m_ops.back().inputWidth = channels;
}

void GraphAssembler::pooling(const std::string& name, std::int64_t channels, std::int64_t window)
{
    Op& op = append(name, Op::Kind::Pooling);
    op.inFeatures = channels * window;
    op.outFeatures = channels;
    op.fwdFlopsPerToken = double(channels * (window - 1)); // comparisons per output
    op.bwdFlopsPerToken = double(channels * window); // the gradient routed to the maximum
    op.activationBytesPerToken = channels * m_activationBytes;
}

void GraphAssembler::loss(const std::string& name, std::int64_t classes, double extraFlopsPerLogit)
{
    Op& op = append(name, Op::Kind::Loss);
    op.inFeatures = classes;
    op.outFeatures = 1;
    // softmax cross-entropy: exp, sum, normalise
    op.fwdFlopsPerToken = (3.0 + extraFlopsPerLogit) * double(classes);
    op.bwdFlopsPerToken = double(classes);
    op.activationBytesPerToken = m_activationBytes;
}

void GraphAssembler::tieToEmbedding(const std::string& name)
{
    for (Op& op : m_ops) {
        if (op.name == name) {
            std::erase_if(op.tensors, [](const ParamTensor& tensor) { return tensor.isMatrix; });
            return;
        }
    }
}

void GraphAssembler::extraTensor(const std::string& name, const std::string& tensor, std::int64_t count)
{
    for (Op& op : m_ops) {
        if (op.name == name) {
            op.tensors.push_back({ tensor, count, false, 0.0 });
            return;
        }
    }
    if (m_mode == Mode::Census) { // an op counted already: its array grows by at most two tensors
        const ParamTensor extra { tensor, count, false, 0.0 };
        ++m_census.tensors;
        m_census.bytes += heapBlockBytes(2.0 * sizeof(ParamTensor));
        countName(extra.name);
    }
}

ModelGraph GraphAssembler::finish()
{
    ModelGraph graph;
    graph.config = m_config;
    // The reader checked the patterns; an op is frozen when every weight of it matches one.
    std::vector<NamePattern> patterns;
    for (const std::string& pattern : m_config.freezePatterns) {
        std::string error;
        if (std::optional<NamePattern> compiled = NamePattern::compile(pattern, error))
            patterns.push_back(std::move(*compiled));
    }
    bool previousFrozen = false;
    bool trainableBefore = false;
    double fwdPerSample = 0, bwdPerSample = 0;
    for (std::size_t i = 0; i < m_ops.size(); ++i) {
        Op& op = m_ops[i];
        op.tokensPerSample = m_tokensPerSample[i];
        bool frozen = m_frozen[i];
        if (!frozen && !op.tensors.empty() && !patterns.empty())
            frozen = std::all_of(op.tensors.begin(), op.tensors.end(),
                [&](const ParamTensor& tensor) { return matchesAny(patterns, tensor.name); });
        if (op.tensors.empty() && !m_frozen[i])
            frozen = previousFrozen;
        else
            previousFrozen = frozen;
        if (frozen)
            applyFrozen(op, trainableBefore);
        else if (!op.tensors.empty())
            trainableBefore = true;
        for (ParamTensor& tensor : op.tensors) {
            bool selected = false;
            if (m_config.sparsity > 0) {
                if (m_config.sparsityFilter.empty())
                    selected = tensor.isMatrix;
                for (const std::string& glob : m_config.sparsityFilter)
                    selected = selected || fnmatch(glob.c_str(), tensor.name.c_str(), 0) == 0;
            }
            tensor.sparsity = selected ? m_config.sparsity : 0.0;
            const auto nonzero = static_cast<std::int64_t>(double(tensor.count) * (1.0 - tensor.sparsity) + 0.5);
            op.params += tensor.count;
            op.nonzeroParams += nonzero;
            if (!op.frozen)
                op.optimizerStateBytes += optimizerBytes(m_config, tensor, op.inFeatures);
        }
        op.weightBytes = op.params * m_config.weightBytes;
        graph.totalParams += op.params;
        graph.nonzeroParams += op.nonzeroParams;
        graph.gradientParams += op.gradientParams();
        (op.frozen ? graph.frozenParams : graph.trainableParams) += op.params;
        graph.weightBytes += op.weightBytes;
        graph.optimizerStateBytes += op.optimizerStateBytes;
        fwdPerSample += op.fwdFlopsPerToken * double(op.tokensPerSample);
        bwdPerSample += op.bwdFlopsPerToken * double(op.tokensPerSample);
    }
    graph.fwdFlopsPerSample = fwdPerSample;
    graph.bwdFlopsPerSample = bwdPerSample;
    const double tokens = double(std::max<std::int64_t>(1, m_config.sequenceLength));
    graph.fwdFlopsPerToken = fwdPerSample / tokens;
    graph.bwdFlopsPerToken = bwdPerSample / tokens;
    graph.ops = std::move(m_ops);
    return graph;
}

} // namespace waferscope::core
