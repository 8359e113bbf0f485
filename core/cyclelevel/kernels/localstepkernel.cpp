// The weight-streaming layout's local steps: each PE works on its own SRAM by trainops.h's
// contract, in one compute step, and sends nothing.
#include "core/cyclelevel/kernels/localstepkernel.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/cyclelevel/referenceops.h"
#include "core/cyclelevel/trainops.h"
#include "core/kernels/streamgemm.h"

#include <span>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;

namespace {

// SIMD operations an element: the rounding, then the activation (computesteps' activation
// costs 8), its derivative's multiply, the softmax's max, exponential (9, as the attention's),
// sum, division, subtraction, scale and rounding, and a token's logarithm.
constexpr int kActivateOps = 1 + 8;
constexpr int kIdentityOps = 1;
constexpr int kActivateBackwardOps = 2;
constexpr int kSoftmaxOps = 1 + 9 + 1 + 4;
constexpr int kLogOps = 8;
// The residual: the rounding, the add and its rounding. LayerNorm: the sum, the centred square
// (3), the normalisation (4) and the rounding an element, and a token's square root and division;
// its backward: the forward's statistics again (4), g, the two sums (5), dx (5), its rounding,
// the carry's add and rounding, and the two terms.
constexpr int kResidualOps = 3;
constexpr int kNormOps = 9;
constexpr int kNormTokenOps = 8;
constexpr int kNormBackwardOps = 4 + 1 + 5 + 5 + 1 + 2 + 2;
constexpr int kNormBackwardTokenOps = 8 + 2;
// The norms' header: T, M, epsilon, x's offset, the carry's (or -1), the terms' (or -1), then the
// weights and biases (2M).
constexpr std::uint32_t kHeader = 6;

Storage storageOf(const Step& step)
{
    return step.color & steps::kBf16 ? Storage::Bf16 : Storage::Fp16;
}

// In place on f32[a, a + b): z = S(x); f32[d + i] = S(act(z)) (scalar: the Activation, or -1 for
// none: h = z).
void activate(PeState& pe, const Step& step)
{
    const Storage storage = storageOf(step);
    for (std::uint32_t i = 0; i < step.b; ++i) {
        const float z = roundToStorage(pe.f32[step.a + i], storage);
        pe.f32[step.a + i] = z;
        pe.f32[step.d + i] = step.scalar < 0.0f ? z : ffnHidden(Activation(int(step.scalar)), z, 0.0f, storage);
    }
}

// f32[d + i] = S(S(f32[a + i]) * act'(f32[c + i])) for i < b.
void activateBackward(PeState& pe, const Step& step)
{
    const Storage storage = storageOf(step);
    const auto kind = Activation(int(step.scalar));
    for (std::uint32_t i = 0; i < step.b; ++i)
        pe.f32[step.d + i] = roundToStorage(
            roundToStorage(pe.f32[step.a + i], storage) * activationDerivative(kind, pe.f32[step.c + i]), storage);
}

// The loss of T tokens over b logits at f32[a] (dims x tokens); f32[c] = T, then the labels (as
// floats); dz to f32[d] (dims x tokens), each token's loss after it; g = scalar.
void softmaxLoss(PeState& pe, const Step& step)
{
    const Storage storage = storageOf(step);
    const auto T = std::uint32_t(pe.f32[step.c]);
    const std::uint32_t m = step.b;
    std::vector<float> logits(m);
    std::vector<float> dz(m);
    for (std::uint32_t t = 0; t < T; ++t) {
        for (std::uint32_t k = 0; k < m; ++k)
            logits[k] = pe.f32[step.a + k * T + t];
        const auto label = std::int32_t(pe.f32[step.c + 1 + t]);
        pe.f32[step.d + m * T + t] = softmaxCrossEntropy(logits, label, step.scalar, storage, dz);
        for (std::uint32_t k = 0; k < m; ++k)
            pe.f32[step.d + k * T + t] = dz[k];
    }
}

// f32[d + i] = S(f32[c + i] + S(f32[a + i])) for i < b.
void residual(PeState& pe, const Step& step)
{
    const Storage storage = storageOf(step);
    for (std::uint32_t i = 0; i < step.b; ++i)
        pe.f32[step.d + i] = roundToStorage(pe.f32[step.c + i] + roundToStorage(pe.f32[step.a + i], storage), storage);
}

struct NormHeader {
    std::uint32_t tokens = 0;
    std::uint32_t dims = 0;
    float epsilon = 0.0f;
    std::int64_t x = -1;
    std::int64_t carry = -1;
    std::int64_t terms = -1;
    std::uint32_t params = 0;
};

NormHeader header(const PeState& pe, std::uint32_t at)
{
    NormHeader h;
    h.tokens = std::uint32_t(pe.f32[at]);
    h.dims = std::uint32_t(pe.f32[at + 1]);
    h.epsilon = pe.f32[at + 2];
    h.x = std::int64_t(pe.f32[at + 3]);
    h.carry = std::int64_t(pe.f32[at + 4]);
    h.terms = std::int64_t(pe.f32[at + 5]);
    h.params = at + kHeader;
    return h;
}

// Token t's M values of a dims x tokens buffer at `offset`.
std::vector<float> column(const PeState& pe, std::uint32_t offset, std::uint32_t t, const NormHeader& h)
{
    std::vector<float> out(h.dims);
    for (std::uint32_t i = 0; i < h.dims; ++i)
        out[i] = pe.f32[offset + i * h.tokens + t];
    return out;
}

// LayerNorm of the T tokens at f32[a] (M x T) into f32[d]; the header at f32[c].
void layerNormStep(PeState& pe, const Step& step)
{
    const NormHeader h = header(pe, step.c);
    const std::span<const float> params(pe.f32.data() + h.params, 2 * std::size_t(h.dims));
    std::vector<float> out(h.dims);
    for (std::uint32_t t = 0; t < h.tokens; ++t) {
        const std::vector<float> x = column(pe, step.a, t, h);
        layerNormForward(x, params.first(h.dims), params.subspan(h.dims), h.epsilon, storageOf(step), out);
        for (std::uint32_t i = 0; i < h.dims; ++i)
            pe.f32[step.d + i * h.tokens + t] = out[i];
    }
}

// LayerNorm's backward of the T tokens' dy at f32[a] into dx at f32[d], the terms beside.
void layerNormBackwardStep(PeState& pe, const Step& step)
{
    const NormHeader h = header(pe, step.c);
    const std::span<const float> params(pe.f32.data() + h.params, 2 * std::size_t(h.dims));
    std::vector<float> dx(h.dims);
    std::vector<float> terms(2 * std::size_t(h.dims));
    for (std::uint32_t t = 0; t < h.tokens; ++t) {
        const std::vector<float> dy = column(pe, step.a, t, h);
        const std::vector<float> x = column(pe, std::uint32_t(h.x), t, h);
        const std::vector<float> carry = h.carry >= 0 ? column(pe, std::uint32_t(h.carry), t, h) : std::vector<float>();
        layerNormBackward(x, params.first(h.dims), dy, carry, h.epsilon, storageOf(step), dx,
            std::span(terms).first(h.dims), std::span(terms).subspan(h.dims));
        for (std::uint32_t i = 0; i < h.dims; ++i)
            pe.f32[step.d + i * h.tokens + t] = dx[i];
        for (std::uint32_t i = 0; i < 2 * h.dims; ++i)
            pe.f32[std::uint32_t(h.terms) + i * h.tokens + t] = terms[i];
    }
}

} // namespace

LocalStepKernel::LocalStepKernel(LocalStepSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
{
    const auto refuse = [&](const std::string& why) { throw std::logic_error(m_spec.name + ": " + why); };
    if (m_spec.frame.w < 1 || m_spec.frame.h < 1 || m_spec.frame.westward)
        refuse("needs an eastward region of at least one PE");
    if (m_spec.tokensPerPe < 1 || m_spec.dims < 1)
        refuse("needs tokens and values");
    const std::size_t tokens = std::size_t(columns()) * std::size_t(m_spec.tokensPerPe);
    const std::size_t expected = tokens * std::size_t(m_spec.dims);
    if (m_spec.input.size() != expected)
        refuse(std::to_string(m_spec.input.size()) + " values; " + std::to_string(tokens) + " tokens x "
            + std::to_string(m_spec.dims) + " expected");
    const bool saves = m_spec.op == LocalStepSpec::Op::ActivateBackward || m_spec.op == LocalStepSpec::Op::Residual
        || m_spec.op == LocalStepSpec::Op::LayerNormBackward;
    if (saves && m_spec.saved.size() != expected)
        refuse("a saved operand of " + std::to_string(m_spec.saved.size()) + " values");
    const bool norm = m_spec.op == LocalStepSpec::Op::LayerNorm || m_spec.op == LocalStepSpec::Op::LayerNormBackward;
    if (norm && m_spec.params.size() != 2 * std::size_t(m_spec.dims))
        refuse(
            std::to_string(m_spec.params.size()) + " norm parameters for " + std::to_string(m_spec.dims) + " values");
    if (!m_spec.carry.empty() && m_spec.carry.size() != expected)
        refuse("a carried gradient of " + std::to_string(m_spec.carry.size()) + " values");
    if (m_spec.op == LocalStepSpec::Op::SoftmaxLoss && m_spec.labels.size() != tokens)
        refuse(std::to_string(m_spec.labels.size()) + " labels for " + std::to_string(tokens) + " tokens");
    if (m_spec.op != LocalStepSpec::Op::SoftmaxLoss && m_spec.activated && !hasTrainingDerivative(m_spec.activation))
        refuse(std::string("no training derivative of the ") + toString(m_spec.activation) + " activation yet");
}

Pass LocalStepKernel::pass() const
{
    return m_spec.op == LocalStepSpec::Op::ActivateBackward || m_spec.op == LocalStepSpec::Op::LayerNormBackward
        ? Pass::BackwardDelta
        : Pass::Forward;
}

std::uint32_t LocalStepKernel::bandBegin(int r) const
{
    return banded() ? blockBegin(m_spec.dims, rows(), r) : (r == 0 ? 0 : std::uint32_t(m_spec.dims));
}

std::int64_t LocalStepKernel::operations(int r) const
{
    const std::int64_t T = m_spec.tokensPerPe;
    switch (m_spec.op) {
    case LocalStepSpec::Op::Activate:
        return std::int64_t(bandSize(r)) * T * (m_spec.activated ? kActivateOps : kIdentityOps);
    case LocalStepSpec::Op::ActivateBackward:
        return std::int64_t(bandSize(r)) * T * kActivateBackwardOps;
    case LocalStepSpec::Op::SoftmaxLoss:
        return m_spec.dims * T * kSoftmaxOps + T * kLogOps;
    case LocalStepSpec::Op::Residual:
        return std::int64_t(bandSize(r)) * T * kResidualOps;
    case LocalStepSpec::Op::LayerNorm:
        return m_spec.dims * T * kNormOps + T * kNormTokenOps;
    case LocalStepSpec::Op::LayerNormBackward:
        return m_spec.dims * T * kNormBackwardOps + T * kNormBackwardTokenOps;
    }
    return 0;
}

void LocalStepKernel::load(StaticColorFabric& fabric)
{
    const auto T = std::uint32_t(m_spec.tokensPerPe);
    const auto m = std::uint32_t(m_spec.dims);
    m_buffers.clear();
    m_outputs.clear();
    m_side.clear();
    for (int r = 0; r < rows(); ++r) {
        const std::uint32_t begin = banded() ? bandBegin(r) : 0;
        const std::uint32_t size = banded() ? bandSize(r) : m;
        for (int c = 0; c < columns(); ++c) {
            const Pe at { m_spec.frame.x(c), m_spec.frame.y(r) };
            PeState& pe = fabric.pe(at.x, at.y);
            Buffers own;
            if (size == 0) {
                m_buffers.push_back(own);
                continue;
            }
            const auto fill = [&](std::uint32_t offset, const std::vector<float>& values) {
                for (std::uint32_t o = 0; o < size; ++o)
                    for (std::uint32_t t = 0; t < T; ++t)
                        pe.f32[offset + o * T + t] = values[(std::size_t(c) * T + t) * m + begin + o];
            };
            own.input = pe.allocF32(std::size_t(size) * T);
            fill(own.input, m_spec.input);
            const std::uint32_t first = std::uint32_t(c) * T;
            switch (m_spec.op) {
            case LocalStepSpec::Op::Activate:
                own.out = pe.allocF32(std::size_t(size) * T);
                m_side.push_back({ at, own.input, first, T, begin, size, true });
                break;
            case LocalStepSpec::Op::ActivateBackward:
            case LocalStepSpec::Op::Residual:
                own.saved = pe.allocF32(std::size_t(size) * T);
                fill(own.saved, m_spec.saved);
                own.out = pe.allocF32(std::size_t(size) * T);
                break;
            case LocalStepSpec::Op::LayerNorm:
            case LocalStepSpec::Op::LayerNormBackward: {
                const bool backward = m_spec.op == LocalStepSpec::Op::LayerNormBackward;
                std::int64_t carry = -1;
                std::int64_t terms = -1;
                if (backward) {
                    own.saved = pe.allocF32(std::size_t(size) * T);
                    fill(own.saved, m_spec.saved);
                    if (!m_spec.carry.empty()) {
                        carry = pe.allocF32(std::size_t(size) * T);
                        fill(std::uint32_t(carry), m_spec.carry);
                    }
                    terms = pe.allocF32(2 * std::size_t(size) * T);
                    if (r == 0)
                        m_side.push_back({ at, std::uint32_t(terms), first, T, 0, 2 * size, true });
                }
                own.header = pe.allocF32(kHeader + 2 * std::size_t(size));
                const float fields[kHeader]
                    = { float(T), float(size), m_spec.epsilon, float(own.saved), float(carry), float(terms) };
                std::copy(std::begin(fields), std::end(fields), pe.f32.begin() + own.header);
                std::copy(m_spec.params.begin(), m_spec.params.end(), pe.f32.begin() + own.header + kHeader);
                // The backward's dx takes dy's place, a token at a time (the step copies a token's dy
                // before it writes its dx).
                own.out = backward ? own.input : pe.allocF32(std::size_t(size) * T);
                break;
            }
            case LocalStepSpec::Op::SoftmaxLoss:
                own.saved = pe.allocF32(1 + std::size_t(T));
                pe.f32[own.saved] = float(T);
                for (std::uint32_t t = 0; t < T; ++t)
                    pe.f32[own.saved + 1 + t] = float(m_spec.labels[std::size_t(c) * T + t]);
                own.out = pe.allocF32(std::size_t(size + 1) * T);
                if (r == 0)
                    m_side.push_back({ at, own.out + size * T, first, T, 0, 1, true });
                break;
            }
            m_outputs.push_back({ at, own.out, first, T, begin, size, true });
            m_buffers.push_back(own);
        }
    }
}

void LocalStepKernel::program(ProgramWriter& writer, int) const
{
    const auto T = std::uint32_t(m_spec.tokensPerPe);
    const std::uint8_t flags = m_context.flags();
    for (int r = 0; r < rows(); ++r) {
        const std::uint32_t size = banded() ? bandSize(r) : std::uint32_t(m_spec.dims);
        if (size == 0)
            continue;
        const std::uint32_t cycles = steps::elementwiseCycles(std::uint64_t(operations(r)), 1, m_context.simdWidth);
        for (int c = 0; c < columns(); ++c) {
            const Buffers& own = m_buffers[std::size_t(r) * std::size_t(columns()) + std::size_t(c)];
            const int x = m_spec.frame.x(c);
            const int y = m_spec.frame.y(r);
            switch (m_spec.op) {
            case LocalStepSpec::Op::Activate:
                writer.compute(x, y, activate, cycles, own.input, size * T, 0, own.out,
                    m_spec.activated ? float(int(m_spec.activation)) : -1.0f, flags);
                break;
            case LocalStepSpec::Op::ActivateBackward:
                writer.compute(x, y, activateBackward, cycles, own.input, size * T, own.saved, own.out,
                    float(int(m_spec.activation)), flags);
                break;
            case LocalStepSpec::Op::SoftmaxLoss:
                writer.compute(
                    x, y, softmaxLoss, cycles, own.input, size, own.saved, own.out, m_spec.gradientScale, flags);
                break;
            case LocalStepSpec::Op::Residual:
                writer.compute(x, y, residual, cycles, own.input, size * T, own.saved, own.out, 0.0f, flags);
                break;
            case LocalStepSpec::Op::LayerNorm:
                writer.compute(x, y, layerNormStep, cycles, own.input, size, own.header, own.out, 0.0f, flags);
                break;
            case LocalStepSpec::Op::LayerNormBackward:
                writer.compute(x, y, layerNormBackwardStep, cycles, own.input, size, own.header, own.out, 0.0f, flags);
                break;
            }
        }
    }
}

KernelCost LocalStepKernel::closedForm() const
{
    LocalStepShape shape;
    shape.columns = columns();
    shape.simdWidth = m_context.simdWidth;
    for (int r = 0; r < rows(); ++r)
        shape.operations.push_back(operations(r));
    return costLocalStep(shape);
}

} // namespace waferscope::core::cyclelevel
