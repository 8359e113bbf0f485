#include "core/cyclelevel/prefilllayer.h"

#include <stdexcept>

namespace waferscope::core::cyclelevel {

namespace {

constexpr int kResidualShifts = 2; // a plain and a transposed projection leave their output two ring positions short

} // namespace

std::optional<std::string> PrefillLayer::unsupported(const DecoderShape& shape)
{
    if (shape.experts > 0)
        return std::string("a mixture of experts (the prefill kernels have no experts kernel)");
    if (shape.positions == DecoderShape::Positions::Alibi)
        return std::string("ALiBi (the ring attention adds no position bias)");
    if (shape.heads < 1 || shape.kvHeads < 1 || shape.heads % shape.kvHeads != 0)
        return std::string("kv heads that do not divide the heads");
    return std::nullopt;
}

PrefillLayer::PrefillLayer(const DecoderShape& shape, const DecoderWeights& weights, int layer, const Frame& frame,
    std::int64_t tokens, const std::vector<PrefillOutputTile>& input, int inputOffset, const KernelContext& context)
    : m_shape(shape)
    , m_weights(weights)
    , m_layer(layer)
    , m_name("layers." + std::to_string(layer) + ".prefill")
    , m_frame(frame)
    , m_tokens(tokens)
    , m_input(input)
    , m_inputOffset(inputOffset)
    , m_context(context)
{
    if (const std::optional<std::string> why = unsupported(shape))
        throw std::logic_error(m_name + ": " + *why);
    if (frame.w != shape.heads)
        throw std::logic_error(m_name + ": the block must be a PE a head on a side (" + std::to_string(shape.heads)
            + "), not " + std::to_string(frame.w));
}

PrefillNormSpec PrefillLayer::norm(
    const std::string& part, Tensor weight, Tensor bias, int offset, const std::vector<PrefillOutputTile>& input) const
{
    PrefillNormSpec spec;
    spec.name = m_name + "." + part;
    spec.frame = m_frame;
    spec.tokens = m_tokens;
    spec.norm = m_shape.norm;
    spec.epsilon = m_shape.normEpsilon;
    spec.weight = m_weights.tensor(weight, m_layer, 0);
    const bool withBias = m_shape.norm == DecoderShape::Norm::LayerNorm && m_shape.normBias;
    spec.bias = withBias ? m_weights.tensor(bias, m_layer, 0) : WeightTensor::absent(m_shape.storage);
    spec.bandOffset = offset;
    spec.input = input;
    return spec;
}

PrefillGemmSpec PrefillLayer::gemm(const std::string& part, Tensor weight, Tensor bias, bool hasBias, int offset,
    bool transposed, const std::vector<PrefillOutputTile>& input) const
{
    PrefillGemmSpec spec;
    spec.name = m_name + "." + part;
    spec.frame = m_frame;
    spec.tokens = m_tokens;
    spec.weight = m_weights.tensor(weight, m_layer, 0);
    spec.bias = hasBias ? m_weights.tensor(bias, m_layer, 0) : WeightTensor::absent(m_shape.storage);
    spec.bandOffset = offset;
    spec.transposed = transposed;
    spec.inputInPlace = input;
    return spec;
}

template <typename Kernel>
std::unique_ptr<Kernel> PrefillLayer::loaded(std::unique_ptr<Kernel> kernel, fabric::StaticColorFabric& fabric)
{
    kernel->load(fabric);
    m_order.push_back(kernel.get());
    return kernel;
}

void PrefillLayer::load(fabric::StaticColorFabric& fabric)
{
    m_order.clear();
    loadAttention(fabric);
    loadFeedForward(fabric);
}

// norm1, q, k and v (rotary; grouped k and v for every query head's row), the ring attention, the
// output projection, the shift that brings its output beside the input, and the residual.
void PrefillLayer::loadAttention(fabric::StaticColorFabric& fabric)
{
    m_norm1 = loaded(std::make_unique<PrefillNormKernel>(
                         norm("norm1", Tensor::Norm1Weight, Tensor::Norm1Bias, m_inputOffset, m_input), m_context),
        fabric);
    const int normed = m_norm1->outputOffset();
    const bool rotary = m_shape.positions == DecoderShape::Positions::Rotary;
    const auto projection = [&](const std::string& part, Tensor weight, Tensor bias, bool rotate, int group) {
        PrefillGemmSpec spec = gemm(part, weight, bias, m_shape.qkvBias, normed, false, m_norm1->outputTiles());
        spec.headDim = int(m_shape.headDim);
        spec.rotary = rotate;
        spec.ropeTheta = float(m_shape.ropeTheta);
        spec.queryHeadsPerKvHead = group;
        return loaded(std::make_unique<PrefillGemmKernel>(spec, m_context), fabric);
    };
    const auto group = int(m_shape.heads / m_shape.kvHeads);
    m_q = projection("q", Tensor::Wq, Tensor::Bq, rotary, 1);
    m_k = projection("k", Tensor::Wk, Tensor::Bk, rotary, group);
    m_v = projection("v", Tensor::Wv, Tensor::Bv, false, group);
    PrefillRingAttentionSpec attention;
    attention.name = m_name + ".attention";
    attention.frame = m_frame;
    attention.headDim = int(m_shape.headDim);
    attention.tokens = m_tokens;
    attention.query = m_q->outputTiles();
    attention.key = m_k->outputTiles();
    attention.value = m_v->outputTiles();
    m_attention = loaded(std::make_unique<PrefillRingAttentionKernel>(attention, m_context), fabric);
    m_out = loaded(std::make_unique<PrefillGemmKernel>(gemm("out", Tensor::Wo, Tensor::Bo, m_shape.outBias, normed - 1,
                                                           true, m_attention->outputTiles()),
                       m_context),
        fabric);
    m_attentionShift = loaded(
        std::make_unique<PrefillShiftKernel>(
            PrefillShiftSpec { m_name + ".out.shift", m_frame, kResidualShifts, m_out->outputTiles() }, m_context),
        fabric);
    m_attentionResidual = loaded(std::make_unique<PrefillCombineKernel>(
                                     PrefillCombineSpec { m_name + ".residual1", m_frame, PrefillCombination::Residual,
                                         m_shape.activation, m_norm1->movedInput(), m_attentionShift->outputTiles() },
                                     m_context),
        fabric);
}

// norm3, up and gate (or up with its activation), the gated activation, down, the shift and the
// residual.
void PrefillLayer::loadFeedForward(fabric::StaticColorFabric& fabric)
{
    const int x2 = m_norm1->outputOffset();
    m_norm3 = loaded(
        std::make_unique<PrefillNormKernel>(
            norm("norm3", Tensor::Norm3Weight, Tensor::Norm3Bias, x2, m_attentionResidual->outputTiles()), m_context),
        fabric);
    const int normed = m_norm3->outputOffset();
    PrefillGemmSpec up = gemm("up", Tensor::WUp, Tensor::BUp, m_shape.ffnBias, normed, false, m_norm3->outputTiles());
    if (!m_shape.gated())
        up.activation = m_shape.activation;
    m_up = loaded(std::make_unique<PrefillGemmKernel>(up, m_context), fabric);
    std::vector<PrefillOutputTile> hidden = m_up->outputTiles();
    if (m_shape.gated()) {
        m_gate = loaded(std::make_unique<PrefillGemmKernel>(gemm("gate", Tensor::WGate, Tensor::BGate, m_shape.ffnBias,
                                                                normed, false, m_norm3->outputTiles()),
                            m_context),
            fabric);
        m_gated = loaded(std::make_unique<PrefillCombineKernel>(
                             PrefillCombineSpec { m_name + ".gated", m_frame, PrefillCombination::Gated,
                                 m_shape.activation, m_gate->outputTiles(), m_up->outputTiles() },
                             m_context),
            fabric);
        hidden = m_gated->outputTiles();
    }
    m_down
        = loaded(std::make_unique<PrefillGemmKernel>(
                     gemm("down", Tensor::WDown, Tensor::BDown, m_shape.ffnBias, normed - 1, true, hidden), m_context),
            fabric);
    m_ffnShift = loaded(
        std::make_unique<PrefillShiftKernel>(
            PrefillShiftSpec { m_name + ".down.shift", m_frame, kResidualShifts, m_down->outputTiles() }, m_context),
        fabric);
    m_ffnResidual = loaded(std::make_unique<PrefillCombineKernel>(
                               PrefillCombineSpec { m_name + ".residual3", m_frame, PrefillCombination::Residual,
                                   m_shape.activation, m_norm3->movedInput(), m_ffnShift->outputTiles() },
                               m_context),
        fabric);
    m_outputOffset = normed;
}

const std::vector<PrefillOutputTile>& PrefillLayer::outputTiles() const
{
    return m_ffnResidual->outputTiles();
}

void PrefillLayer::needRings(PrefillRings& rings) const
{
    for (const PrefillKernel* kernel : m_order)
        kernel->needRings(rings);
}

void PrefillLayer::useRings(const PrefillRings& rings)
{
    for (PrefillKernel* kernel : m_order)
        kernel->useRings(rings);
}

void PrefillLayer::program(ProgramWriter& writer) const
{
    for (const PrefillKernel* kernel : m_order)
        kernel->program(writer, -1);
}

double PrefillLayer::closedFormCycles() const
{
    double cycles = 0.0;
    for (const PrefillKernel* kernel : m_order)
        cycles += kernel->closedForm().cycles;
    return cycles;
}

} // namespace waferscope::core::cyclelevel
