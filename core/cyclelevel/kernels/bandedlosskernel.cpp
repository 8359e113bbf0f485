// The banded softmax cross-entropy (bandedlosskernel.h): three compute steps a PE around two
// column all-reduces (columnreducekernel.h), the max's and the sum's.
#include "core/cyclelevel/kernels/bandedlosskernel.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/cyclelevel/trainops.h"
#include "core/kernels/closedform.h"
#include "core/kernels/streamgemm.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;

namespace {

// The header (f32): T, the band's size and first index, then the offsets of z (band x T), the
// max (where this row holds the reduced one), the band's own sums, the reduced sums, dz, the
// losses, the labels (T, as floats), the band's own max.
enum Field : std::uint32_t { kTokens, kBand, kFirst, kZ, kMax, kSumOwn, kSum, kGrad, kLoss, kLabels, kMaxOwn, kFields };
constexpr int kExpOps = 9;
constexpr int kLogOps = 8;

struct View {
    PeState& pe;
    std::uint32_t header;
    std::uint32_t at(Field f) const { return std::uint32_t(pe.f32[header + f]); }
    std::uint32_t T() const { return at(kTokens); }
    std::uint32_t band() const { return at(kBand); }
    float z(std::uint32_t k, std::uint32_t t) const { return pe.f32[at(kZ) + k * T() + t]; }
};

void bandMax(PeState& pe, const Step& step)
{
    const View v { pe, step.a };
    for (std::uint32_t t = 0; t < v.T(); ++t) {
        float top = -std::numeric_limits<float>::infinity();
        for (std::uint32_t k = 0; k < v.band(); ++k)
            top = std::max(top, v.z(k, t));
        pe.f32[v.at(kMaxOwn) + t] = top;
    }
}

void bandSum(PeState& pe, const Step& step)
{
    const View v { pe, step.a };
    for (std::uint32_t t = 0; t < v.T(); ++t) {
        const float top = pe.f32[v.at(kMax) + t];
        float sum = 0.0f;
        for (std::uint32_t k = 0; k < v.band(); ++k)
            sum += std::exp(v.z(k, t) - top);
        pe.f32[v.at(kSumOwn) + t] = sum;
    }
}

void bandGradient(PeState& pe, const Step& step)
{
    const View v { pe, step.a };
    const Rounding round(step.color & steps::kBf16 ? Storage::Bf16 : Storage::Fp16);
    const std::uint32_t first = v.at(kFirst);
    for (std::uint32_t t = 0; t < v.T(); ++t) {
        const auto label = std::int64_t(pe.f32[v.at(kLabels) + t]);
        const float top = pe.f32[v.at(kMax) + t];
        const float total = pe.f32[v.at(kSum) + t];
        float loss = 0.0f;
        for (std::uint32_t k = 0; k < v.band(); ++k) {
            float dz = 0.0f;
            if (label >= 0) {
                const float p = std::exp(v.z(k, t) - top) / total;
                dz = round((p - (std::int64_t(first + k) == label ? 1.0f : 0.0f)) * step.scalar);
            }
            pe.f32[v.at(kGrad) + k * v.T() + t] = dz;
        }
        if (label >= std::int64_t(first) && label < std::int64_t(first + v.band()))
            loss = (std::log(total) + top) - v.z(std::uint32_t(label) - first, t);
        pe.f32[v.at(kLoss) + t] = loss;
    }
}

} // namespace

BandedLossKernel::BandedLossKernel(BandedLossSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
    , m_max(m_spec.name + " max", m_spec.frame)
    , m_sum(m_spec.name + " sum", m_spec.frame)
{
    const auto refuse = [&](const std::string& why) { throw std::logic_error(m_spec.name + ": " + why); };
    if (m_spec.frame.w < 1 || m_spec.frame.h < 1 || m_spec.frame.westward)
        refuse("needs an eastward region of at least one PE");
    if (m_spec.tokensPerPe < 1 || m_spec.dims < 1)
        refuse("needs tokens and logits");
    const std::size_t tokens = std::size_t(columns()) * std::size_t(m_spec.tokensPerPe);
    if (m_spec.logits.size() != tokens * std::size_t(m_spec.dims) || m_spec.labels.size() != tokens)
        refuse("logits or labels of other sizes than " + std::to_string(tokens) + " tokens'");
}

std::uint32_t BandedLossKernel::bandBegin(int r) const
{
    return blockBegin(m_spec.dims, rows(), r);
}

std::uint32_t BandedLossKernel::maxCycles(int r) const
{
    return steps::elementwiseCycles(
        std::uint64_t(bandSize(r)) * std::uint64_t(m_spec.tokensPerPe), 1, m_context.simdWidth);
}

std::uint32_t BandedLossKernel::sumCycles(int r) const
{
    return steps::elementwiseCycles(
        std::uint64_t(bandSize(r)) * std::uint64_t(m_spec.tokensPerPe), kExpOps + 2, m_context.simdWidth);
}

std::uint32_t BandedLossKernel::finishCycles(int r) const
{
    // The exponential, division, subtraction, scale and rounding an element; a token's logarithm.
    const std::uint64_t T = std::uint64_t(m_spec.tokensPerPe);
    return steps::elementwiseCycles(
        std::uint64_t(bandSize(r)) * T * (kExpOps + 4) + T * kLogOps, 1, m_context.simdWidth);
}

void BandedLossKernel::route(RouteBook& book)
{
    m_max.route(book);
    m_sum.route(book);
}

void BandedLossKernel::load(StaticColorFabric& fabric)
{
    const auto T = std::uint32_t(m_spec.tokensPerPe);
    const auto V = std::uint32_t(m_spec.dims);
    m_buffers.clear();
    m_outputs.clear();
    m_side.clear();
    for (int r = 0; r < rows(); ++r)
        for (int c = 0; c < columns(); ++c) {
            const Pe at { m_spec.frame.x(c), m_spec.frame.y(r) };
            PeState& pe = fabric.pe(at.x, at.y);
            Buffers own;
            std::uint32_t fields[kFields] = {};
            fields[kTokens] = T;
            fields[kBand] = bandSize(r);
            fields[kFirst] = bandBegin(r);
            own.header = pe.allocF32(kFields);
            fields[kZ] = pe.allocF32(std::max<std::size_t>(1, std::size_t(bandSize(r)) * T));
            for (std::uint32_t k = 0; k < bandSize(r); ++k)
                for (std::uint32_t t = 0; t < T; ++t)
                    pe.f32[fields[kZ] + k * T + t] = m_spec.logits[(std::size_t(c) * T + t) * V + bandBegin(r) + k];
            own.maxOwn = pe.allocF32(T);
            own.maxResult = pe.allocF32(T);
            own.sumOwn = pe.allocF32(T);
            own.sumResult = pe.allocF32(T);
            fields[kMaxOwn] = own.maxOwn;
            fields[kMax] = m_max.resultAt(r, own.maxOwn, own.maxResult);
            fields[kSumOwn] = own.sumOwn;
            fields[kSum] = m_sum.resultAt(r, own.sumOwn, own.sumResult);
            fields[kGrad] = pe.allocF32(std::max<std::size_t>(1, std::size_t(bandSize(r)) * T));
            fields[kLoss] = pe.allocF32(T);
            fields[kLabels] = pe.allocF32(T);
            for (std::uint32_t t = 0; t < T; ++t)
                pe.f32[fields[kLabels] + t] = float(m_spec.labels[std::size_t(c) * T + t]);
            for (std::uint32_t f = 0; f < kFields; ++f)
                pe.f32[own.header + f] = float(fields[f]);
            m_buffers.push_back(own);
            if (bandSize(r) > 0)
                m_outputs.push_back({ at, fields[kGrad], std::uint32_t(c) * T, T, bandBegin(r), bandSize(r), true });
            m_side.push_back({ at, fields[kLoss], std::uint32_t(c) * T, T, std::uint32_t(r), 1, true });
        }
}

void BandedLossKernel::program(ProgramWriter& writer, int) const
{
    const auto T = std::uint32_t(m_spec.tokensPerPe);
    const std::uint8_t flags = m_context.flags();
    for (int r = 0; r < rows(); ++r)
        for (int c = 0; c < columns(); ++c) {
            const Buffers& own = m_buffers[std::size_t(r) * std::size_t(columns()) + std::size_t(c)];
            const int x = m_spec.frame.x(c);
            const int y = m_spec.frame.y(r);
            writer.compute(x, y, bandMax, maxCycles(r), own.header, 0, 0, 0, 0.0f, flags);
            m_max.program(writer, c, r, own.maxOwn, own.maxResult, T, true, nullptr, 0, flags);
            writer.compute(x, y, bandSum, sumCycles(r), own.header, 0, 0, 0, 0.0f, flags);
            m_sum.program(writer, c, r, own.sumOwn, own.sumResult, T, false, nullptr, 0, flags);
            writer.compute(x, y, bandGradient, finishCycles(r), own.header, 0, 0, 0, m_spec.gradientScale, flags);
        }
}

KernelCost BandedLossKernel::closedForm() const
{
    // The widest band's steps around the two all-reduces of T values: a chain passes a row only
    // once that row's step is done, and the widest band's is the last (bands differ by one).
    const double T = m_spec.tokensPerPe;
    const ColumnAllReduceCost reduce = costColumnAllReduce(rows(), T, 0.0);
    int widest = 0;
    for (int r = 1; r < rows(); ++r)
        if (bandSize(r) > bandSize(widest))
            widest = r;
    const double cycles
        = double(maxCycles(widest)) + double(sumCycles(widest)) + double(finishCycles(widest)) + 2.0 * reduce.cycles;
    double busy = 0.0;
    double busiest = 0.0;
    for (int r = 0; r < rows(); ++r) {
        const double reduces = rows() < 2 ? 0.0
            : r == 0                      ? reduce.engineFirst
            : r + 1 == rows()             ? reduce.engineLast
                                          : reduce.engineMiddle;
        const double engine = double(maxCycles(r)) + double(sumCycles(r)) + double(finishCycles(r)) + 2.0 * reduces;
        busy += double(columns()) * engine;
        busiest = std::max(busiest, engine);
    }
    return closedform::decodeCost(
        cycles, busy, double(rows()) * double(columns()), busiest, T, 2.0 * double(columns()) * reduce.linkWavelets);
}

} // namespace waferscope::core::cyclelevel
