#include "core/cyclelevel/kernels/normcolumn.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/cyclelevel/kernels/kernelsupport.h"
#include "core/cyclelevel/referenceops.h"
#include "core/fabric/kernels.h"
#include "core/kernels/norm.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;
using detail::chainHops;
using detail::encode;

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

void NormColumn::program(ProgramWriter& writer, const KernelColors& colors, std::int64_t) const
{
    const int inColor = colors.in;
    const int outColor = colors.out;
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

KernelCost NormColumn::closedForm(std::int64_t) const
{
    NormColumnShape shape;
    for (const Lane& lane : m_lanes)
        shape.laneSizes.push_back(lane.size());
    shape.layerNorm = m_norm == DecoderShape::Norm::LayerNorm;
    shape.simdWidth = m_context.simdWidth;
    return costNormColumn(shape);
}

} // namespace waferscope::core::cyclelevel
