// Causal attention of a training step, one head a PE row, the tokens' blocks passing along it.
//
// Layout: after the gather of the fused projection, every PE of column c holds q, k and v of
// every head for its T tokens; PE (c, h) takes head h's. A sequence spans the columns
// [first, last] of its segment (one column when a column holds whole sequences).
//
// Forward and QueryGrad: each PE sends its key and value block (2 T hd wavelets) east to the
// next column of its segment, on the color of its column's parity, and works on its own block;
// then, for each column before it in the segment, it stores the block that comes from the west
// (passing it on east as it stores it, unless it is the segment's last column) and folds it in:
// the blocks come nearest first, since each PE sends its own before what it passes on, which is
// the contract's order (trainops.h 9). Then it finishes: O and the log-sum-exp, or dQ.
// KeyGrad: the same westward, with the query block (q, dO, the log-sum-exp and D: (2 hd + 2) T
// wavelets), after each PE has computed its D; each PE folds the blocks after it into its keys'
// dK and dV, and finishes with them.
//
// A compute step holds the engine for its operations over the SIMD width (computesteps.h): a
// block is a T x T tile of scores, each with its dot products of hd (two or three in the
// backward), its exponential (9) and its sums, counted whole whether the causal mask keeps a
// score or not.
#include "core/cyclelevel/kernels/rowattentionkernel.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/cyclelevel/trainops.h"
#include "core/kernels/streamgemm.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;

namespace {

enum Field : std::uint32_t {
    kTokens,
    kHeadDim,
    kSequence,
    kFirst,
    kQuery,
    kKey,
    kValue,
    kMax,
    kSum,
    kAcc,
    kLse,
    kGradOut,
    kOut,
    kDelta,
    kGradQuery,
    kGradKey,
    kGradValue,
    kFields
};

constexpr int kExpOps = 9;

Storage storageOf(const Step& step)
{
    return step.color & steps::kBf16 ? Storage::Bf16 : Storage::Fp16;
}

struct View {
    PeState& pe;
    std::uint32_t header;
    std::uint32_t field(Field f) const { return std::uint32_t(pe.f32[header + f]); }
    std::int64_t T() const { return std::int64_t(pe.f32[header + kTokens]); }
    std::int64_t hd() const { return std::int64_t(pe.f32[header + kHeadDim]); }
    std::int64_t S() const { return std::int64_t(pe.f32[header + kSequence]); }
    std::int64_t first() const { return std::int64_t(pe.f32[header + kFirst]); }
    std::span<float> at(std::uint32_t offset, std::int64_t count) const
    {
        return std::span(pe.f32).subspan(offset, std::size_t(count));
    }
    std::span<float> of(Field f, std::int64_t count) const { return at(field(f), count); }
    AttentionBlock own(Field f) const { return { of(f, T() * hd()), first(), T() }; }
};

// Writes T x width token-major values as width x T (dims-major) at `offset`.
void toDimsMajor(PeState& pe, std::span<const float> values, std::int64_t T, std::int64_t width, std::uint32_t offset)
{
    for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t d = 0; d < width; ++d)
            pe.f32[offset + std::size_t(d * T + t)] = values[std::size_t(t * width + d)];
}

// Forward: the key block at f32[b] (k, then v), its first token the scalar.
void forwardBlock(PeState& pe, const Step& step)
{
    const View v { pe, step.a };
    const std::int64_t size = v.T() * v.hd();
    attentionForwardBlock(v.own(kQuery), { v.at(step.b, size), std::int64_t(step.scalar), v.T() },
        v.at(step.b + std::uint32_t(size), size), v.S(), v.hd(), v.of(kMax, v.T()), v.of(kSum, v.T()),
        v.of(kAcc, size));
}

void forwardFinish(PeState& pe, const Step& step)
{
    const View v { pe, step.a };
    std::vector<float> out(std::size_t(v.T() * v.hd()));
    attentionFinish(v.of(kMax, v.T()), v.of(kSum, v.T()), v.of(kAcc, v.T() * v.hd()), v.hd(), storageOf(step), out,
        v.of(kLse, v.T()));
    toDimsMajor(pe, out, v.T(), v.hd(), step.d);
}

// The backward's D of the PE's own queries.
void prepare(PeState& pe, const Step& step)
{
    const View v { pe, step.a };
    attentionDelta(v.of(kGradOut, v.T() * v.hd()), v.of(kOut, v.T() * v.hd()), v.hd(), v.of(kDelta, v.T()));
}

void queryGradBlock(PeState& pe, const Step& step)
{
    const View v { pe, step.a };
    const std::int64_t size = v.T() * v.hd();
    attentionQueryGradBlock(v.own(kQuery), v.of(kGradOut, size), v.of(kLse, v.T()), v.of(kDelta, v.T()),
        { v.at(step.b, size), std::int64_t(step.scalar), v.T() }, v.at(step.b + std::uint32_t(size), size), v.S(),
        v.hd(), v.of(kGradQuery, size));
}

void queryGradFinish(PeState& pe, const Step& step)
{
    const View v { pe, step.a };
    const Rounding round(storageOf(step));
    const float scale = 1.0f / std::sqrt(float(v.hd()));
    std::vector<float> out(std::size_t(v.T() * v.hd()));
    const std::span<const float> dq = v.of(kGradQuery, v.T() * v.hd());
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = round(dq[i] * scale);
    toDimsMajor(pe, out, v.T(), v.hd(), step.d);
}

// KeyGrad: the query block at f32[b] (q, dO, the log-sum-exp, D), its first token the scalar.
void keyGradBlock(PeState& pe, const Step& step)
{
    const View v { pe, step.a };
    const std::int64_t size = v.T() * v.hd();
    const auto at
        = [&](std::int64_t offset, std::int64_t count) { return v.at(step.b + std::uint32_t(offset), count); };
    attentionKeyGradBlock(v.own(kKey), v.of(kValue, size), { at(0, size), std::int64_t(step.scalar), v.T() },
        at(size, size), at(2 * size, v.T()), at(2 * size + v.T(), v.T()), v.S(), v.hd(), v.of(kGradKey, size),
        v.of(kGradValue, size));
}

void keyGradFinish(PeState& pe, const Step& step)
{
    const View v { pe, step.a };
    const Rounding round(storageOf(step));
    const float scale = 1.0f / std::sqrt(float(v.hd()));
    const std::int64_t hd = v.hd();
    std::vector<float> out(std::size_t(v.T() * 2 * hd));
    const std::span<const float> dk = v.of(kGradKey, v.T() * hd);
    const std::span<const float> dv = v.of(kGradValue, v.T() * hd);
    for (std::int64_t t = 0; t < v.T(); ++t)
        for (std::int64_t d = 0; d < hd; ++d) {
            out[std::size_t(t * 2 * hd + d)] = round(dk[std::size_t(t * hd + d)] * scale);
            out[std::size_t(t * 2 * hd + hd + d)] = round(dv[std::size_t(t * hd + d)]);
        }
    toDimsMajor(pe, out, v.T(), 2 * hd, step.d);
}

} // namespace

RowAttentionKernel::RowAttentionKernel(RowAttentionSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
{
    const auto refuse = [&](const std::string& why) { throw std::logic_error(m_spec.name + ": " + why); };
    if (m_spec.frame.w < 1 || m_spec.frame.h < 1 || m_spec.frame.westward)
        refuse("needs an eastward region of at least one PE");
    if (m_spec.heads < 1 || m_spec.headDim < 1 || m_spec.heads > rows())
        refuse(std::to_string(m_spec.heads) + " heads on " + std::to_string(rows()) + " rows");
    const std::int64_t T = m_spec.tokensPerPe;
    if (T < 1 || m_spec.sequence < 1 || (m_spec.sequence % T != 0 && T % m_spec.sequence != 0))
        refuse(std::to_string(T) + " tokens a PE for sequences of " + std::to_string(m_spec.sequence));
    const std::size_t tokens = std::size_t(columns()) * std::size_t(T);
    const std::size_t width = std::size_t(m_spec.heads * m_spec.headDim);
    if (m_spec.qkv.size() != tokens * 3 * width)
        refuse(std::to_string(m_spec.qkv.size()) + " q, k and v values for " + std::to_string(tokens) + " tokens");
    if (m_spec.mode != RowAttentionSpec::Mode::Forward
        && (m_spec.out.size() != tokens * width || m_spec.dOut.size() != tokens * width
            || m_spec.lse.size() != tokens * std::size_t(m_spec.heads)))
        refuse("the backward needs O, dO and the log-sum-exp of every token");
}

Pass RowAttentionKernel::pass() const
{
    return m_spec.mode == RowAttentionSpec::Mode::Forward ? Pass::Forward : Pass::BackwardDelta;
}

int RowAttentionKernel::segmentFirst(int c) const
{
    const std::int64_t T = m_spec.tokensPerPe;
    return int((std::int64_t(c) * T / m_spec.sequence) * m_spec.sequence / T);
}

int RowAttentionKernel::segmentLast(int c) const
{
    const std::int64_t T = m_spec.tokensPerPe;
    const std::int64_t end = ((std::int64_t(c) * T + T - 1) / m_spec.sequence + 1) * m_spec.sequence - 1;
    return int(std::min<std::int64_t>(columns() - 1, end / T));
}

std::uint32_t RowAttentionKernel::tileSize() const
{
    const auto block = std::uint32_t(m_spec.tokensPerPe * m_spec.headDim);
    return east() ? 2 * block : 2 * block + 2 * std::uint32_t(m_spec.tokensPerPe);
}

std::uint32_t RowAttentionKernel::blockCycles() const
{
    const std::int64_t T = m_spec.tokensPerPe;
    const std::int64_t hd = m_spec.headDim;
    std::int64_t perScore = 0;
    std::int64_t perQuery = 0;
    switch (m_spec.mode) {
    case RowAttentionSpec::Mode::Forward: // the dot, scale, exp, sum, weighted values; the rescale
        perScore = hd + 1 + kExpOps + 1 + hd;
        perQuery = kExpOps + 2 + hd;
        break;
    case RowAttentionSpec::Mode::QueryGrad: // the dot, scale, exp, dO . v, ds, dq
        perScore = hd + 1 + kExpOps + hd + 2 + hd;
        break;
    case RowAttentionSpec::Mode::KeyGrad: // the dot, scale, exp, dO . v, ds, dk and dv
        perScore = hd + 1 + kExpOps + hd + 2 + 2 * hd;
        break;
    }
    return steps::elementwiseCycles(std::uint64_t(T * T * perScore + T * perQuery), 1, m_context.simdWidth);
}

std::uint32_t RowAttentionKernel::finishCycles() const
{
    const std::int64_t T = m_spec.tokensPerPe;
    const std::int64_t hd = m_spec.headDim;
    const std::int64_t values = m_spec.mode == RowAttentionSpec::Mode::KeyGrad ? 2 * hd : hd;
    const std::int64_t perToken = m_spec.mode == RowAttentionSpec::Mode::Forward ? kExpOps : 0; // the log
    return steps::elementwiseCycles(std::uint64_t(T * values * 2 + T * perToken), 1, m_context.simdWidth);
}

std::uint32_t RowAttentionKernel::prepareCycles() const
{
    return steps::elementwiseCycles(std::uint64_t(m_spec.tokensPerPe * m_spec.headDim), 1, m_context.simdWidth);
}

void RowAttentionKernel::route(RouteBook& book)
{
    StreamTree chain[2] { StreamTree(m_spec.name + " blocks"), StreamTree(m_spec.name + " blocks") };
    for (int h = 0; h < m_spec.heads; ++h) {
        const int y = m_spec.frame.y(int(h));
        for (int c = 0; c < columns(); ++c) {
            const int to = east() ? c + 1 : c - 1;
            if (to < segmentFirst(c) || to > segmentLast(c))
                continue;
            StreamTree& tree = chain[c % 2];
            tree.hop(m_spec.frame.x(c), y, Fabric::kRampPort, directionBit(east() ? East : West));
            tree.hop(m_spec.frame.x(to), y, east() ? West : East, kRampBit);
        }
    }
    for (int parity = 0; parity < 2; ++parity)
        if (!chain[parity].empty())
            m_colors[parity] = book.place(chain[parity]);
}

void RowAttentionKernel::load(StaticColorFabric& fabric)
{
    const std::int64_t T = m_spec.tokensPerPe;
    const std::int64_t hd = m_spec.headDim;
    const std::int64_t width = m_spec.heads * hd;
    const std::uint32_t block = std::uint32_t(T * hd);
    m_buffers.assign(std::size_t(rows()) * std::size_t(columns()), Buffers {});
    m_outputs.clear();
    m_side.clear();
    for (int h = 0; h < m_spec.heads; ++h) {
        for (int c = 0; c < columns(); ++c) {
            const Pe at { m_spec.frame.x(c), m_spec.frame.y(h) };
            PeState& pe = fabric.pe(at.x, at.y);
            Buffers& own = m_buffers[std::size_t(h) * std::size_t(columns()) + std::size_t(c)];
            std::uint32_t fields[kFields] = {};
            // Token-major T x hd of head h's part `part` (0 q, 1 k, 2 v) of qkv, or of O or dO.
            const auto fill = [&](std::uint32_t offset, const std::vector<float>& from, std::int64_t stride,
                                  std::int64_t base) {
                for (std::int64_t t = 0; t < T; ++t)
                    for (std::int64_t d = 0; d < hd; ++d)
                        pe.f32[offset + std::size_t(t * hd + d)] = from[std::size_t((c * T + t) * stride + base + d)];
            };
            const std::int64_t qkvAt = h * 3 * hd;
            own.header = pe.allocF32(kFields);
            own.tile = pe.allocF32(tileSize());
            const std::uint32_t first = std::uint32_t(c) * std::uint32_t(T);
            if (east()) {
                fields[kKey] = own.tile;
                fields[kValue] = own.tile + block;
                fill(fields[kKey], m_spec.qkv, 3 * width, qkvAt + hd);
                fill(fields[kValue], m_spec.qkv, 3 * width, qkvAt + 2 * hd);
                fields[kQuery] = pe.allocF32(block);
                fill(fields[kQuery], m_spec.qkv, 3 * width, qkvAt);
            } else {
                fields[kQuery] = own.tile;
                fields[kGradOut] = own.tile + block;
                fields[kLse] = own.tile + 2 * block;
                fields[kDelta] = own.tile + 2 * block + std::uint32_t(T);
                fill(fields[kQuery], m_spec.qkv, 3 * width, qkvAt);
                fields[kKey] = pe.allocF32(block);
                fill(fields[kKey], m_spec.qkv, 3 * width, qkvAt + hd);
                fields[kValue] = pe.allocF32(block);
                fill(fields[kValue], m_spec.qkv, 3 * width, qkvAt + 2 * hd);
            }
            switch (m_spec.mode) {
            case RowAttentionSpec::Mode::Forward:
                fields[kMax] = pe.allocF32(std::size_t(T));
                std::fill_n(pe.f32.begin() + fields[kMax], T, -std::numeric_limits<float>::infinity());
                fields[kSum] = pe.allocF32(std::size_t(T));
                fields[kAcc] = pe.allocF32(block);
                fields[kLse] = pe.allocF32(std::size_t(T));
                m_side.push_back({ at, fields[kLse], first, std::uint32_t(T), std::uint32_t(h), 1, true });
                break;
            case RowAttentionSpec::Mode::QueryGrad:
                fields[kGradOut] = pe.allocF32(block);
                fields[kLse] = pe.allocF32(std::size_t(T));
                fields[kDelta] = pe.allocF32(std::size_t(T));
                fields[kGradQuery] = pe.allocF32(block);
                [[fallthrough]];
            case RowAttentionSpec::Mode::KeyGrad:
                fill(fields[kGradOut], m_spec.dOut, width, h * hd);
                for (std::int64_t t = 0; t < T; ++t)
                    pe.f32[fields[kLse] + std::size_t(t)] = m_spec.lse[std::size_t((c * T + t) * m_spec.heads + h)];
                fields[kOut] = pe.allocF32(block);
                fill(fields[kOut], m_spec.out, width, h * hd);
                if (m_spec.mode == RowAttentionSpec::Mode::KeyGrad) {
                    fields[kGradKey] = pe.allocF32(block);
                    fields[kGradValue] = pe.allocF32(block);
                }
                break;
            }
            fields[kTokens] = std::uint32_t(T);
            fields[kHeadDim] = std::uint32_t(hd);
            fields[kSequence] = std::uint32_t(m_spec.sequence);
            fields[kFirst] = first;
            for (std::uint32_t f = 0; f < kFields; ++f)
                pe.f32[own.header + f] = float(fields[f]);
            if (segmentLast(c) > segmentFirst(c)) {
                own.in[0] = pe.allocF32(tileSize());
                own.in[1] = pe.allocF32(tileSize());
            }
            const bool keys = m_spec.mode == RowAttentionSpec::Mode::KeyGrad;
            own.out = pe.allocF32(std::size_t(keys ? 2 * block : block));
            const std::uint32_t dim = m_spec.mode == RowAttentionSpec::Mode::Forward ? std::uint32_t(h * hd)
                : keys                                                               ? std::uint32_t(qkvAt + hd)
                                                                                     : std::uint32_t(qkvAt);
            m_outputs.push_back({ at, own.out, first, std::uint32_t(T), dim, std::uint32_t(keys ? 2 * hd : hd), true });
        }
    }
}

void RowAttentionKernel::program(ProgramWriter& writer, int) const
{
    const std::uint8_t flags = m_context.flags();
    const auto T = std::uint32_t(m_spec.tokensPerPe);
    ComputeFn block = forwardBlock;
    ComputeFn finish = forwardFinish;
    if (m_spec.mode == RowAttentionSpec::Mode::QueryGrad) {
        block = queryGradBlock;
        finish = queryGradFinish;
    } else if (m_spec.mode == RowAttentionSpec::Mode::KeyGrad) {
        block = keyGradBlock;
        finish = keyGradFinish;
    }
    const int step = east() ? 1 : -1;
    for (int h = 0; h < m_spec.heads; ++h) {
        for (int c = 0; c < columns(); ++c) {
            const Buffers& own = m_buffers[std::size_t(h) * std::size_t(columns()) + std::size_t(c)];
            const int x = m_spec.frame.x(c);
            const int y = m_spec.frame.y(h);
            const int onward = c + step;
            const bool sends = onward >= segmentFirst(c) && onward <= segmentLast(c);
            const int arrivals = east() ? c - segmentFirst(c) : segmentLast(c) - c;
            if (m_spec.mode != RowAttentionSpec::Mode::Forward)
                writer.compute(x, y, prepare, prepareCycles(), own.header, 0, 0, 0, 0.0f, flags);
            if (sends)
                writer.send(x, y, m_colors[c % 2], own.tile, tileSize());
            writer.compute(x, y, block, blockCycles(), own.header, own.tile, 0, 0, float(std::uint32_t(c) * T), flags);
            if (sends)
                writer.awaitSend(x, y);
            const int incoming = m_colors[(c + 1) % 2];
            for (int k = 1; k <= arrivals; ++k) {
                const std::uint32_t buffer = own.in[k % 2];
                writer.arm(x, y, incoming, storeTask(buffer, tileSize(), sends ? m_colors[c % 2] : kNoColor));
                writer.await(x, y, incoming);
                writer.compute(x, y, block, blockCycles(), own.header, buffer, 0, 0,
                    float(std::uint32_t(c - step * k) * T), flags);
            }
            writer.compute(x, y, finish, finishCycles(), own.header, 0, 0, own.out, 0.0f, flags);
        }
    }
}

KernelCost RowAttentionKernel::closedForm() const
{
    RowAttentionShape shape;
    shape.columns = columns();
    shape.rows = rows();
    shape.heads = int(m_spec.heads);
    shape.segment = segmentLast(0) - segmentFirst(0) + 1;
    shape.tileWavelets = tileSize();
    shape.blockCycles = blockCycles();
    shape.finishCycles = finishCycles();
    shape.prepareCycles = m_spec.mode == RowAttentionSpec::Mode::Forward ? 0 : prepareCycles();
    return costRowAttention(shape);
}

} // namespace waferscope::core::cyclelevel
