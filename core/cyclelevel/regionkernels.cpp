#include "core/cyclelevel/regionkernels.h"

#include "core/cyclelevel/computesteps.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;

namespace {

std::uint16_t encode(float value, const KernelContext& context)
{
    return context.storage == Storage::Bf16 ? floatToBfloat16(value) : floatToHalf(value);
}

// A chain along `pes` in order: PE p > 0 receives on chain[(p - 1) % 2] from p - 1, PE p sends on
// chain[p % 2] to p + 1. Adds the hops of both colors to `trees`.
void chainHops(const std::vector<Pe>& pes, StreamTree trees[2])
{
    for (std::size_t p = 0; p + 1 < pes.size(); ++p) {
        const Pe from = pes[p];
        const Pe to = pes[p + 1];
        const int direction = to.x > from.x ? East : to.x < from.x ? West : to.y > from.y ? South : North;
        trees[p % 2].hop(from.x, from.y, Fabric::kRampPort, directionBit(direction));
        trees[p % 2].hop(to.x, to.y, opposite(direction), kRampBit);
    }
}

} // namespace

// ---- NormColumn ----

NormColumn::NormColumn(std::string name, const Frame& frame, Lanes lanes, DecoderShape::Norm norm, float epsilon,
    WeightTensor weight, WeightTensor bias, const KernelContext& context)
    : m_name(std::move(name))
    , m_frame(frame)
    , m_lanes(std::move(lanes))
    , m_norm(norm)
    , m_epsilon(epsilon)
    , m_weight(weight)
    , m_bias(bias)
    , m_context(context)
{
    for (std::size_t i = 1; i < m_lanes.size(); ++i)
        if (m_lanes[i].y != m_lanes[i - 1].y + 1)
            throw std::logic_error(m_name + ": a norm column needs its lanes on consecutive rows");
}

void NormColumn::route(RouteBook& book)
{
    std::vector<Pe> pes;
    for (std::size_t i = 0; i < m_lanes.size(); ++i)
        pes.push_back(exit(i));
    if (pes.size() < 2)
        return;
    StreamTree chain[2] = { StreamTree(m_name + " reduction"), StreamTree(m_name + " reduction") };
    chainHops(pes, chain);
    m_chain[0] = book.place(chain[0]);
    if (!chain[1].empty())
        m_chain[1] = book.place(chain[1]);
    StreamTree broadcast(m_name + " statistics");
    broadcast.run(pes.back().x, pes.back().y, North, int(pes.size()), Fabric::kRampPort, [&] {
        std::vector<bool> deliver(pes.size(), true);
        deliver[0] = false; // the sender
        return deliver;
    }());
    m_broadcast = book.place(broadcast);
}

void NormColumn::load(StaticColorFabric& fabric)
{
    const bool layerNorm = m_norm == DecoderShape::Norm::LayerNorm;
    for (std::size_t i = 0; i < m_lanes.size(); ++i) {
        const Lane& lane = m_lanes[i];
        PeState& pe = fabric.pe(exit(i).x, lane.y);
        m_x.push_back(pe.allocF32(lane.size()));
        m_stats.push_back(pe.allocF32(3));
        const std::uint32_t weights = pe.allocF16(std::size_t(lane.size()) * (layerNorm && m_bias.present() ? 2 : 1));
        m_weights.push_back(weights);
        for (std::uint32_t k = 0; k < lane.size(); ++k) {
            pe.f16[weights + k] = encode(m_weight.at(0, lane.begin + k), m_context);
            if (layerNorm && m_bias.present())
                pe.f16[weights + lane.size() + k] = encode(m_bias.at(0, lane.begin + k), m_context);
        }
    }
}

void NormColumn::program(ProgramWriter& writer, int inColor, int outColor) const
{
    const std::size_t count = m_lanes.size();
    std::uint32_t length = 0;
    for (const Lane& lane : m_lanes)
        length += lane.size();
    const bool layerNorm = m_norm == DecoderShape::Norm::LayerNorm;
    const int simd = m_context.simdWidth;
    const std::uint8_t flags = std::uint8_t(m_context.flags() | (layerNorm && m_bias.present() ? steps::kBias : 0));
    // Sums the partials (at stats + 0) down the column; the last PE holds the total.
    const auto reduce = [&](std::size_t i) {
        const Pe pe = exit(i);
        const std::uint32_t partial = m_stats[i];
        if (count == 1)
            return;
        if (i == 0) {
            writer.send(pe.x, pe.y, m_chain[0], partial, 1);
            return;
        }
        const int in = m_chain[(i - 1) % 2];
        writer.armAndAwait(pe.x, pe.y, in, addTask(partial, 1, i + 1 < count ? m_chain[i % 2] : kNoColor));
    };
    // The last PE turns the total into a statistic at stats + slot and every PE gets it.
    const auto share = [&](std::size_t i, std::uint32_t slot) {
        const Pe pe = exit(i);
        if (count == 1)
            return;
        if (i + 1 == count)
            writer.send(pe.x, pe.y, m_broadcast, m_stats[i] + slot, 1);
        else
            writer.armAndAwait(pe.x, pe.y, m_broadcast, storeTask(m_stats[i] + slot, 1));
    };
    const float n = float(length);
    const auto epsilonBits = std::bit_cast<std::uint32_t>(m_epsilon);
    for (std::size_t i = 0; i < count; ++i) {
        const Pe pe = exit(i);
        const std::uint32_t size = m_lanes[i].size();
        const std::uint32_t stats = m_stats[i];
        writer.armAndAwait(pe.x, pe.y, inColor, storeTask(m_x[i], size));
        if (layerNorm) {
            writer.compute(pe.x, pe.y, steps::partialSum, steps::elementwiseCycles(size, 1, simd), m_x[i], size, stats);
            reduce(i);
            if (i + 1 == count)
                writer.compute(pe.x, pe.y, steps::mean, 1, stats, 0, stats + 1, 0, n);
            share(i, 1);
            writer.compute(pe.x, pe.y, steps::partialCentredSquares, steps::elementwiseCycles(size, 2, simd), m_x[i],
                size, stats, stats + 1);
            reduce(i);
            if (i + 1 == count)
                writer.compute(pe.x, pe.y, steps::inverseDeviation, 2, stats, 0, stats + 2, epsilonBits, n);
            share(i, 2);
            writer.compute(pe.x, pe.y, steps::layerNormApply, steps::elementwiseCycles(size, 3, simd), m_x[i], size,
                m_weights[i], stats + 1, 0.0f, flags);
        } else {
            writer.compute(
                pe.x, pe.y, steps::partialSquares, steps::elementwiseCycles(size, 1, simd), m_x[i], size, stats);
            reduce(i);
            if (i + 1 == count)
                writer.compute(pe.x, pe.y, steps::inverseDeviation, 2, stats, 0, stats + 2, epsilonBits, n);
            share(i, 2);
            writer.compute(pe.x, pe.y, steps::rmsNormApply, steps::elementwiseCycles(size, 2, simd), m_x[i], size,
                m_weights[i], stats + 2, 0.0f, flags);
        }
        if (outColor >= 0)
            writer.send(pe.x, pe.y, outColor, m_x[i], size);
    }
}

// ---- GemvKernel ----

GemvKernel::GemvKernel(GemvSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
{
    const Frame& frame = m_spec.frame;
    if (m_spec.input.empty() || m_spec.output.empty())
        throw std::logic_error(m_spec.name + ": a GEMV needs input and output lanes");
    if (gemvColumns() < int(m_spec.input.size()))
        throw std::logic_error(m_spec.name + ": " + std::to_string(gemvColumns()) + " GEMV columns for "
            + std::to_string(m_spec.input.size()) + " input lanes");
    m_rowOutput.assign(std::size_t(frame.h), -1);
    for (std::size_t k = 0; k < m_spec.output.size(); ++k) {
        const int row = m_spec.output[k].y - frame.y0;
        if (row < 0 || row >= frame.h || m_rowOutput[std::size_t(row)] >= 0)
            throw std::logic_error(m_spec.name + ": output lanes must be on distinct rows of the region");
        m_rowOutput[std::size_t(row)] = int(k);
        if (k > 0 && m_spec.epilogue == Epilogue::Logits && m_spec.output[k].y != m_spec.output[k - 1].y + 1)
            throw std::logic_error(m_spec.name + ": logits need their lanes on consecutive rows");
    }
    for (const Lane& lane : m_spec.input)
        if (lane.y < frame.y0 || lane.y >= frame.y0 + frame.h)
            throw std::logic_error(m_spec.name + ": an input lane is outside the region's rows");
}

int GemvKernel::outputAt(int row) const
{
    return m_rowOutput[std::size_t(row)];
}

std::pair<std::uint32_t, std::uint32_t> GemvKernel::partOf(int t) const
{
    const auto lanes = int(m_spec.input.size());
    const int lane = t % lanes;
    const int parts = (gemvColumns() - 1 - lane) / lanes + 1;
    const int part = t / lanes;
    const std::uint32_t size = m_spec.input[std::size_t(lane)].size();
    const std::uint32_t begin = blockBegin(size, parts, part);
    return { begin, blockBegin(size, parts, part + 1) - begin };
}

std::vector<Pe> GemvKernel::taps(std::size_t lane) const
{
    std::vector<Pe> pes;
    for (int t = int(lane); t < gemvColumns(); t += int(m_spec.input.size()))
        pes.push_back({ m_spec.frame.x(m_spec.firstColumn + t), m_spec.input[lane].y });
    return pes;
}

void GemvKernel::route(RouteBook& book)
{
    const Frame& frame = m_spec.frame;
    int firstRow = frame.h;
    int lastRow = -1;
    for (const Lane& lane : m_spec.output) {
        firstRow = std::min(firstRow, lane.y - frame.y0);
        lastRow = std::max(lastRow, lane.y - frame.y0);
    }
    // The turned multicast: from each column's turn PE up and down to the output rows.
    StreamTree columns(m_spec.name + " column multicast");
    m_multicasts.assign(std::size_t(gemvColumns()), 0);
    for (int t = 0; t < gemvColumns(); ++t) {
        const int x = frame.x(m_spec.firstColumn + t);
        const int turn = m_spec.input[laneOf(t)].y - frame.y0;
        std::uint8_t tx = 0;
        if (firstRow < turn)
            tx |= directionBit(North);
        if (lastRow > turn)
            tx |= directionBit(South);
        if (!tx)
            continue;
        m_multicasts[std::size_t(t)] = 1;
        columns.hop(x, frame.y(turn), Fabric::kRampPort, tx);
        for (int row = turn - 1; row >= firstRow; --row)
            columns.hop(x, frame.y(row), South,
                std::uint8_t((row > firstRow ? directionBit(North) : 0) | (outputAt(row) >= 0 ? kRampBit : 0)));
        for (int row = turn + 1; row <= lastRow; ++row)
            columns.hop(x, frame.y(row), North,
                std::uint8_t((row < lastRow ? directionBit(South) : 0) | (outputAt(row) >= 0 ? kRampBit : 0)));
    }
    if (!columns.empty())
        m_column = book.place(columns);
    // The reductions along the output rows.
    StreamTree chain[2] = { StreamTree(m_spec.name + " reduction"), StreamTree(m_spec.name + " reduction") };
    for (const Lane& lane : m_spec.output) {
        std::vector<Pe> pes;
        for (int t = 0; t < gemvColumns(); ++t)
            pes.push_back({ frame.x(m_spec.firstColumn + t), lane.y });
        chainHops(pes, chain);
    }
    for (int i = 0; i < 2; ++i)
        if (!chain[i].empty())
            m_chain[i] = book.place(chain[i]);
    if (m_spec.epilogue == Epilogue::Logits && m_spec.output.size() > 1) {
        std::vector<Pe> pes;
        for (std::size_t k = 0; k < m_spec.output.size(); ++k)
            pes.push_back(exit(k));
        StreamTree argmax[2] = { StreamTree(m_spec.name + " argmax"), StreamTree(m_spec.name + " argmax") };
        chainHops(pes, argmax);
        m_argmax = book.place(argmax[0]);
        if (!argmax[1].empty()) {
            const int second = book.place(argmax[1]);
            m_argmax |= second << 8;
        }
    }
}

void GemvKernel::load(StaticColorFabric& fabric)
{
    const Frame& frame = m_spec.frame;
    const std::size_t blocks = m_spec.output.size();
    m_acc.assign(std::size_t(gemvColumns()) * blocks, -1);
    m_block.assign(std::size_t(gemvColumns()) * blocks, -1);
    for (int t = 0; t < gemvColumns(); ++t) {
        const Lane& in = m_spec.input[laneOf(t)];
        const auto [skip, use] = partOf(t);
        for (std::size_t k = 0; k < blocks; ++k) {
            const Lane& out = m_spec.output[k];
            PeState& pe = fabric.pe(frame.x(m_spec.firstColumn + t), out.y);
            m_acc[std::size_t(t) * blocks + k] = std::int32_t(pe.allocF32(out.size()));
            const std::uint32_t block = pe.allocF16(std::size_t(out.size()) * use);
            m_block[std::size_t(t) * blocks + k] = std::int32_t(block);
            for (std::uint32_t j = 0; j < use; ++j)
                for (std::uint32_t i = 0; i < out.size(); ++i)
                    pe.f16[block + j * out.size() + i]
                        = encode(m_spec.weight.at(out.begin + i, in.begin + skip + j), m_context);
        }
    }
    for (std::size_t k = 0; k < blocks; ++k) {
        const Lane& out = m_spec.output[k];
        PeState& pe = fabric.pe(exit(k).x, out.y);
        m_result.push_back(pe.allocF32(out.size()));
        m_side.push_back(hasSideInput() ? pe.allocF32(out.size()) : 0);
        const std::uint32_t bias = pe.allocF16(m_spec.bias.present() ? out.size() : 0);
        m_biasAt.push_back(bias);
        for (std::uint32_t i = 0; i < out.size() && m_spec.bias.present(); ++i)
            pe.f16[bias + i] = encode(m_spec.bias.at(0, out.begin + i), m_context);
        m_pair.push_back(m_spec.epilogue == Epilogue::Logits ? pe.allocF32(4) : 0);
    }
}

void GemvKernel::program(ProgramWriter& writer, int inColor, int sideColor, int outColor, std::int64_t position) const
{
    const Frame& frame = m_spec.frame;
    const std::size_t blocks = m_spec.output.size();
    const int simd = m_context.simdWidth;
    const int columns = gemvColumns();
    const std::uint8_t flags = std::uint8_t(m_context.flags() | (m_spec.bias.present() ? steps::kBias : 0));
    for (int t = 0; t < columns; ++t) {
        const int x = frame.x(m_spec.firstColumn + t);
        const Lane& in = m_spec.input[laneOf(t)];
        const auto [skip, use] = partOf(t);
        const int turn = in.y - frame.y0;
        for (int row = 0; row < frame.h; ++row) {
            const int k = outputAt(row);
            const bool isTurn = row == turn;
            if (k < 0 && !isTurn)
                continue;
            const int y = frame.y(row);
            const bool isExit = k >= 0 && t + 1 == columns;
            if (isExit && hasSideInput())
                writer.arm(x, y, sideColor, storeTask(m_side[std::size_t(k)], m_spec.output[std::size_t(k)].size()));
            DataTask fmac;
            fmac.kind = TaskKind::FmacColumn;
            fmac.expected = in.size();
            fmac.skip = skip;
            fmac.use = use;
            fmac.format = m_context.format();
            fmac.outColor = std::uint8_t(isTurn && m_multicasts[std::size_t(t)] ? m_column : kNoColor);
            std::uint32_t size = 0;
            std::uint32_t acc = 0;
            if (k >= 0) {
                size = m_spec.output[std::size_t(k)].size();
                acc = std::uint32_t(m_acc[std::size_t(t) * blocks + std::size_t(k)]);
                fmac.vector = acc;
                fmac.length = size;
                fmac.matrix = std::uint32_t(m_block[std::size_t(t) * blocks + std::size_t(k)]);
                writer.compute(x, y, steps::zero, steps::elementwiseCycles(size, 1, simd), acc, size);
            }
            writer.armAndAwait(x, y, isTurn ? inColor : m_column, fmac);
            if (k < 0)
                continue;
            if (columns > 1) {
                if (t == 0)
                    writer.send(x, y, m_chain[0], acc, size);
                else
                    writer.armAndAwait(
                        x, y, m_chain[(t - 1) % 2], addTask(acc, size, t + 1 < columns ? m_chain[t % 2] : kNoColor));
            }
            if (!isExit)
                continue;
            const std::uint32_t result = m_result[std::size_t(k)];
            const std::uint32_t bias = m_biasAt[std::size_t(k)];
            const std::uint32_t side = m_side[std::size_t(k)];
            const auto cycles = [&](int ops) { return steps::elementwiseCycles(size, ops, simd); };
            switch (m_spec.epilogue) {
            case Epilogue::Round:
                writer.compute(x, y, steps::biasRound, cycles(1), acc, size, bias, result, 0.0f, flags);
                break;
            case Epilogue::Rotary:
                writer.compute(x, y, steps::biasRound, cycles(1), acc, size, bias, result, 0.0f, flags);
                writer.compute(x, y, steps::rotary, cycles(6), result, size, std::uint32_t(position), 0,
                    float(m_spec.ropeTheta), flags);
                break;
            case Epilogue::Residual:
                writer.compute(x, y, steps::biasRound, cycles(1), acc, size, bias, result, 0.0f, flags);
                writer.await(x, y, sideColor);
                writer.compute(x, y, steps::residual, cycles(1), result, size, side, result, 0.0f, flags);
                break;
            case Epilogue::Activation:
                writer.compute(x, y, steps::biasRound, cycles(1), acc, size, bias, result, 0.0f, flags);
                writer.compute(
                    x, y, steps::activation, cycles(8), result, size, 0, 0, float(int(m_spec.activation)), flags);
                break;
            case Epilogue::Gated:
                writer.compute(x, y, steps::biasRound, cycles(1), acc, size, bias, result, 0.0f, flags);
                writer.await(x, y, sideColor);
                writer.compute(
                    x, y, steps::gated, cycles(8), result, size, side, result, float(int(m_spec.activation)), flags);
                break;
            case Epilogue::Logits: {
                writer.compute(x, y, steps::biasOnly, cycles(1), acc, size, bias, result, 0.0f, flags);
                const std::uint32_t pair = m_pair[std::size_t(k)];
                writer.compute(
                    x, y, steps::localArgmax, cycles(1), result, size, pair, m_spec.output[std::size_t(k)].begin);
                const int colors[2] = { m_argmax & 0xff, m_argmax >> 8 };
                if (k > 0) {
                    writer.armAndAwait(x, y, colors[(k - 1) % 2], storeTask(pair + 2, 2));
                    writer.compute(x, y, steps::argmaxCombine, 1, pair + 2, 0, pair);
                }
                if (std::size_t(k) + 1 < blocks)
                    writer.send(x, y, colors[k % 2], pair, 2);
                break;
            }
            }
            if (outColor >= 0 && m_spec.epilogue != Epilogue::Logits)
                writer.send(x, y, outColor, result, size);
        }
    }
}

// ---- AttentionKernel ----

AttentionKernel::AttentionKernel(AttentionSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
{
    if (m_spec.heads > m_spec.frame.h)
        throw std::logic_error(m_spec.name + ": " + std::to_string(m_spec.heads)
            + " heads need as many rows, the region has " + std::to_string(m_spec.frame.h));
    m_slots = (m_spec.capacity + m_spec.frame.w - 1) / m_spec.frame.w;
    if (m_spec.headDim >= 65536 || m_slots >= 65536)
        throw std::logic_error(m_spec.name + ": head or cache too large for one PE");
}

std::vector<Pe> AttentionKernel::taps(std::size_t head) const
{
    std::vector<Pe> pes;
    for (int u = 0; u < m_spec.frame.w; ++u)
        pes.push_back({ m_spec.frame.x(u), m_spec.frame.y(int(head)) });
    return pes;
}

Lanes AttentionKernel::outputLanes() const
{
    Lanes lanes;
    for (int h = 0; h < m_spec.heads; ++h)
        lanes.push_back(
            { m_spec.frame.y(h), std::uint32_t(h * m_spec.headDim), std::uint32_t((h + 1) * m_spec.headDim) });
    return lanes;
}

void AttentionKernel::route(RouteBook& book)
{
    const Frame& frame = m_spec.frame;
    if (frame.w < 2)
        return;
    StreamTree chain[2] = { StreamTree(m_spec.name + " reduction"), StreamTree(m_spec.name + " reduction") };
    StreamTree back(m_spec.name + " max broadcast");
    std::vector<bool> deliver(std::size_t(frame.w), true);
    deliver[0] = false;
    for (int h = 0; h < m_spec.heads; ++h) {
        chainHops(taps(std::size_t(h)), chain);
        back.run(frame.x(frame.w - 1), frame.y(h), frame.backward(), frame.w, Fabric::kRampPort, deliver);
    }
    m_chain[0] = book.place(chain[0]);
    if (!chain[1].empty())
        m_chain[1] = book.place(chain[1]);
    m_back = book.place(back);
}

void AttentionKernel::load(StaticColorFabric& fabric)
{
    const Frame& frame = m_spec.frame;
    const steps::AttentionLayout layout { 0, std::uint32_t(m_spec.headDim), std::uint32_t(m_slots) };
    for (int h = 0; h < m_spec.heads; ++h) {
        for (int u = 0; u < frame.w; ++u) {
            PeState& pe = fabric.pe(frame.x(u), frame.y(h));
            m_workspace.push_back(pe.allocF32(layout.size()));
            m_cache.push_back(pe.allocF16(std::size_t(2) * std::size_t(m_slots) * std::size_t(m_spec.headDim)));
            if (u + 1 == frame.w)
                m_result.push_back(pe.allocF32(std::size_t(m_spec.headDim)));
        }
    }
}

void AttentionKernel::program(
    ProgramWriter& writer, int qColor, int kColor, int vColor, int outColor, std::int64_t position) const
{
    const Frame& frame = m_spec.frame;
    const int w = frame.w;
    const auto d = std::uint32_t(m_spec.headDim);
    const int simd = m_context.simdWidth;
    const std::uint8_t flags = m_context.flags();
    const float scale = 1.0f / std::sqrt(float(m_spec.headDim));
    if (position >= m_spec.capacity)
        throw std::logic_error(m_spec.name + ": position beyond the cache");
    for (int h = 0; h < m_spec.heads; ++h) {
        for (int u = 0; u < w; ++u) {
            const int x = frame.x(u);
            const int y = frame.y(h);
            const std::size_t at = std::size_t(h) * std::size_t(w) + std::size_t(u);
            const steps::AttentionLayout layout { m_workspace[at], d, std::uint32_t(m_slots) };
            const std::uint32_t cache = m_cache[at];
            writer.arm(x, y, qColor, storeTask(layout.q(), d));
            writer.arm(x, y, kColor, storeTask(layout.k(), d));
            writer.arm(x, y, vColor, storeTask(layout.v(), d));
            writer.await(x, y, qColor);
            writer.await(x, y, kColor);
            writer.await(x, y, vColor);
            if (position % w == u)
                writer.compute(x, y, steps::appendKv, steps::elementwiseCycles(2 * d, 1, simd), layout.base,
                    layout.packed(), cache, std::uint32_t(position / w), 0.0f, flags);
            const std::uint32_t held = position >= u ? std::uint32_t((position - u) / w + 1) : 0;
            const std::uint32_t dotCycles = held * steps::elementwiseCycles(d, 1, simd);
            writer.compute(x, y, steps::scores, std::max<std::uint32_t>(1, dotCycles + held), layout.base,
                layout.packed(), cache, held, scale, flags);
            // The max along the row, then back to every PE.
            if (w > 1) {
                if (u == 0)
                    writer.send(x, y, m_chain[0], layout.max(), 1);
                else
                    writer.armAndAwait(
                        x, y, m_chain[(u - 1) % 2], maxTask(layout.max(), 1, u + 1 < w ? m_chain[u % 2] : kNoColor));
                if (u + 1 == w)
                    writer.send(x, y, m_back, layout.max(), 1);
                else
                    writer.armAndAwait(x, y, m_back, storeTask(layout.max(), 1));
            }
            writer.compute(x, y, steps::softmaxPartial,
                std::max<std::uint32_t>(1, held * (8 + steps::elementwiseCycles(d, 1, simd))), layout.base,
                layout.packed(), cache, held, 0.0f, flags);
            if (w > 1) {
                if (u == 0)
                    writer.send(x, y, m_chain[0], layout.partial(), d + 1);
                else
                    writer.armAndAwait(x, y, m_chain[(u - 1) % 2],
                        addTask(layout.partial(), d + 1, u + 1 < w ? m_chain[u % 2] : kNoColor));
            }
            if (u + 1 < w)
                continue;
            const std::uint32_t result = m_result[std::size_t(h)];
            writer.compute(x, y, steps::attentionOutput, steps::elementwiseCycles(d, 2, simd), layout.base,
                layout.packed(), 0, result, 0.0f, flags);
            if (outColor >= 0)
                writer.send(x, y, outColor, result, d);
        }
    }
}

// ---- EmbeddingKernel ----

EmbeddingKernel::EmbeddingKernel(EmbeddingSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
{
    const Frame& frame = m_spec.frame;
    const auto lanes = std::int64_t(m_spec.lanes.size());
    if (lanes > frame.w)
        throw std::logic_error(m_spec.name + ": " + std::to_string(lanes) + " lanes need as many columns");
    for (std::int64_t i = 0; i < lanes; ++i) {
        const int first = int(blockBegin(frame.w, lanes, i));
        const int end = int(blockBegin(frame.w, lanes, i + 1));
        std::vector<Pe> chain;
        for (int v = 0; v < frame.h; ++v) {
            for (int k = 0; k < end - first; ++k) {
                const int u = v % 2 == 0 ? first + k : end - 1 - k;
                chain.push_back({ frame.x(u), frame.y(v) });
            }
        }
        m_chains.push_back(std::move(chain));
    }
}

void EmbeddingKernel::route(RouteBook& book)
{
    const Frame& frame = m_spec.frame;
    StreamTree broadcast(m_spec.name + " token id");
    // Along row 0 from the root, and down every column.
    for (int u = 0; u < frame.w; ++u) {
        std::uint8_t tx = frame.h > 1 ? directionBit(South) : 0;
        if (u + 1 < frame.w)
            tx |= directionBit(frame.forward());
        if (u > 0)
            tx |= kRampBit;
        if (tx)
            broadcast.hop(frame.x(u), frame.y(0), u == 0 ? Fabric::kRampPort : frame.backward(), tx);
        for (int v = 1; v < frame.h; ++v)
            broadcast.hop(
                frame.x(u), frame.y(v), North, std::uint8_t((v + 1 < frame.h ? directionBit(South) : 0) | kRampBit));
    }
    if (!broadcast.empty())
        m_broadcast = book.place(broadcast);
    StreamTree chain[2] = { StreamTree(m_spec.name + " sum"), StreamTree(m_spec.name + " sum") };
    for (const std::vector<Pe>& pes : m_chains)
        chainHops(pes, chain);
    for (int i = 0; i < 2; ++i)
        if (!chain[i].empty())
            m_chain[i] = book.place(chain[i]);
}

void EmbeddingKernel::load(StaticColorFabric& fabric)
{
    const std::int64_t vocab = m_spec.token.rows();
    const std::int64_t positions = m_spec.position.present() ? m_spec.position.rows() : 0;
    m_out.resize(m_chains.size());
    m_meta.resize(m_chains.size());
    for (std::size_t lane = 0; lane < m_chains.size(); ++lane) {
        const Lane& range = m_spec.lanes[lane];
        const auto count = std::int64_t(m_chains[lane].size());
        for (std::int64_t k = 0; k < count; ++k) {
            const Pe at = m_chains[lane][std::size_t(k)];
            PeState& pe = fabric.pe(at.x, at.y);
            const std::uint32_t rowBegin = blockBegin(vocab, count, k);
            const std::uint32_t rowEnd = blockBegin(vocab, count, k + 1);
            const std::uint32_t positionBegin = blockBegin(positions, count, k);
            const std::uint32_t positionEnd = blockBegin(positions, count, k + 1);
            const std::uint32_t rows = pe.allocF16(std::size_t(rowEnd - rowBegin) * range.size());
            for (std::uint32_t r = rowBegin; r < rowEnd; ++r)
                for (std::uint32_t i = 0; i < range.size(); ++i)
                    pe.f16[rows + (r - rowBegin) * range.size() + i]
                        = encode(m_spec.token.at(r, range.begin + i), m_context);
            const std::uint32_t positionRows = pe.allocF16(std::size_t(positionEnd - positionBegin) * range.size());
            for (std::uint32_t r = positionBegin; r < positionEnd; ++r)
                for (std::uint32_t i = 0; i < range.size(); ++i)
                    pe.f16[positionRows + (r - positionBegin) * range.size() + i]
                        = encode(m_spec.position.at(r, range.begin + i), m_context);
            m_out[lane].push_back(pe.allocF32(range.size()));
            const std::uint32_t meta = pe.allocF32(9); // the 8 constants, then the token id
            const std::uint32_t constants[]
                = { meta + 8, rowBegin, rowEnd, rows, positionBegin, positionEnd, positionRows, 0 };
            for (int c = 0; c < 8; ++c)
                pe.f32[meta + std::uint32_t(c)] = std::bit_cast<float>(constants[c]);
            m_meta[lane].push_back(meta);
        }
    }
}

std::uint32_t EmbeddingKernel::resultOffset(std::size_t lane) const
{
    return m_out[lane].back();
}

void EmbeddingKernel::program(ProgramWriter& writer, int tokenColor, int outColor, std::int64_t position) const
{
    const int simd = m_context.simdWidth;
    const Pe top = root();
    for (std::size_t lane = 0; lane < m_chains.size(); ++lane) {
        const std::vector<Pe>& chain = m_chains[lane];
        const std::uint32_t size = m_spec.lanes[lane].size();
        for (std::size_t k = 0; k < chain.size(); ++k) {
            const Pe at = chain[k];
            const std::uint32_t meta = m_meta[lane][k];
            const std::uint32_t out = m_out[lane][k];
            PeState& pe = writer.pe(at.x, at.y);
            pe.f32[meta + 7] = std::bit_cast<float>(std::uint32_t(position)); // a constant of this token's program
            if (at.x == top.x && at.y == top.y)
                writer.armAndAwait(at.x, at.y, tokenColor, storeTask(meta + 8, 1, m_broadcast));
            else
                writer.armAndAwait(at.x, at.y, m_broadcast, storeTask(meta + 8, 1));
            writer.compute(at.x, at.y, steps::embeddingContribution, steps::elementwiseCycles(size, 2, simd), out, size,
                meta, 0, 0.0f, m_context.flags());
            if (chain.size() > 1) {
                if (k == 0)
                    writer.send(at.x, at.y, m_chain[0], out, size);
                else
                    writer.armAndAwait(at.x, at.y, m_chain[(k - 1) % 2],
                        addTask(out, size, k + 1 < chain.size() ? m_chain[k % 2] : kNoColor));
            }
            if (k + 1 < chain.size())
                continue;
            writer.compute(at.x, at.y, steps::roundInPlace, steps::elementwiseCycles(size, 1, simd), out, size, 0, 0,
                0.0f, m_context.flags());
            if (outColor >= 0)
                writer.send(at.x, at.y, outColor, out, size);
        }
    }
}

} // namespace waferscope::core::cyclelevel
