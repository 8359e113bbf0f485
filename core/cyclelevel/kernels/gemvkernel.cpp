#include "core/cyclelevel/kernels/gemvkernel.h"

#include "core/cyclelevel/kernels/computesteps.h"
#include "core/cyclelevel/kernels/kernelsupport.h"
#include "core/cyclelevel/referenceops.h"
#include "core/fabric/kernels.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;
using detail::chainHops;
using detail::encode;

// ---- GemvKernel ----

GemvKernel::GemvKernel(GemvSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
{
    const Frame& frame = m_spec.frame;
    if (m_spec.input.empty() || m_spec.output.empty())
        throw std::logic_error(m_spec.name + ": a GEMV needs input and output lanes");
    if (gemvColumns() < 1)
        throw std::logic_error(m_spec.name + ": a GEMV needs a column");
    if ((m_spec.input.size() + std::size_t(gemvColumns()) - 1) / std::size_t(gemvColumns()) > 6)
        throw std::logic_error(m_spec.name + ": " + std::to_string(gemvColumns()) + " GEMV columns for "
            + std::to_string(m_spec.input.size()) + " input lanes would need more than 6 turn colors");
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

std::vector<GemvKernel::Share> GemvKernel::sharesOf(int t) const
{
    const auto lanes = int(m_spec.input.size());
    const int columns = gemvColumns();
    std::vector<Share> shares;
    if (columns >= lanes) { // a lane per column, in parts
        const int lane = t % lanes;
        const int parts = (columns - 1 - lane) / lanes + 1;
        const int part = t / lanes;
        const std::uint32_t size = m_spec.input[std::size_t(lane)].size();
        const std::uint32_t begin = blockBegin(size, parts, part);
        shares.push_back({ std::size_t(lane), begin, blockBegin(size, parts, part + 1) - begin, 0 });
        return shares;
    }
    for (int lane = t, turn = 0; lane < lanes; lane += columns, ++turn) // whole lanes, several per column
        shares.push_back({ std::size_t(lane), 0, m_spec.input[std::size_t(lane)].size(), std::size_t(turn) });
    return shares;
}

std::vector<Pe> GemvKernel::taps(std::size_t lane) const
{
    std::vector<Pe> pes;
    const int columns = gemvColumns();
    const auto lanes = int(m_spec.input.size());
    if (columns < lanes)
        return { { m_spec.frame.x(m_spec.firstColumn + int(lane) % columns), m_spec.input[lane].y } };
    for (int t = int(lane); t < columns; t += lanes)
        pes.push_back({ m_spec.frame.x(m_spec.firstColumn + t), m_spec.input[lane].y });
    return pes;
}

std::vector<Pe> GemvKernel::workers() const
{
    const Frame& frame = m_spec.frame;
    std::vector<Pe> pes;
    for (int t = 0; t < gemvColumns(); ++t) {
        const std::vector<Share> shares = sharesOf(t);
        for (int row = 0; row < frame.h; ++row) {
            bool turn = false;
            for (const Share& share : shares)
                turn = turn || m_spec.input[share.lane].y - frame.y0 == row;
            if (turn || outputAt(row) >= 0)
                pes.push_back({ frame.x(m_spec.firstColumn + t), frame.y(row) });
        }
    }
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
    m_firstRow = firstRow;
    m_lastRow = lastRow;
    // The turned multicasts: from each lane's turn PE up and down its column to the output rows,
    // a color for each of a column's lanes.
    std::vector<StreamTree> columns;
    for (int t = 0; t < gemvColumns(); ++t) {
        const int x = frame.x(m_spec.firstColumn + t);
        for (const Share& share : sharesOf(t)) {
            while (columns.size() <= share.turn)
                columns.emplace_back(m_spec.name + " column multicast");
            StreamTree& tree = columns[share.turn];
            const int turn = m_spec.input[share.lane].y - frame.y0;
            std::uint8_t tx = 0;
            if (firstRow < turn)
                tx |= directionBit(North);
            if (lastRow > turn)
                tx |= directionBit(South);
            if (!tx)
                continue;
            tree.hop(x, frame.y(turn), Fabric::kRampPort, tx);
            for (int row = turn - 1; row >= firstRow; --row)
                tree.hop(x, frame.y(row), South,
                    std::uint8_t((row > firstRow ? directionBit(North) : 0) | (outputAt(row) >= 0 ? kRampBit : 0)));
            for (int row = turn + 1; row <= lastRow; ++row)
                tree.hop(x, frame.y(row), North,
                    std::uint8_t((row < lastRow ? directionBit(South) : 0) | (outputAt(row) >= 0 ? kRampBit : 0)));
        }
    }
    for (const StreamTree& tree : columns)
        m_column.push_back(tree.empty() ? -1 : book.place(tree));
    // The reductions along the output rows.
    const int count = gemvColumns();
    if (m_spec.treeReduced) {
        // Level l: from position d (counted back from the exit) 2^l columns forward, through
        // routers that only pass it on.
        for (int level = 0; level < reductionTreeLevels(count); ++level) {
            StreamTree tree(m_spec.name + " tree level " + std::to_string(level));
            const int span = 1 << level;
            for (const Lane& lane : m_spec.output)
                for (int d = span; d < count; d += 2 * span) {
                    const int from = count - 1 - d;
                    tree.hop(
                        frame.x(m_spec.firstColumn + from), lane.y, Fabric::kRampPort, directionBit(frame.forward()));
                    for (int t = from + 1; t < from + span; ++t)
                        tree.hop(
                            frame.x(m_spec.firstColumn + t), lane.y, frame.backward(), directionBit(frame.forward()));
                    tree.hop(frame.x(m_spec.firstColumn + from + span), lane.y, frame.backward(), kRampBit);
                }
            m_tree.push_back(book.place(tree));
        }
    } else {
        StreamTree chain[2] = { StreamTree(m_spec.name + " reduction"), StreamTree(m_spec.name + " reduction") };
        for (const Lane& lane : m_spec.output) {
            std::vector<Pe> pes;
            for (int t = 0; t < count; ++t)
                pes.push_back({ frame.x(m_spec.firstColumn + t), lane.y });
            chainHops(pes, chain);
        }
        for (int i = 0; i < 2; ++i)
            if (!chain[i].empty())
                m_chain[i] = book.place(chain[i]);
    }
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
        const std::vector<Share> shares = sharesOf(t);
        std::uint32_t total = 0;
        for (const Share& share : shares)
            total += share.use;
        for (std::size_t k = 0; k < blocks; ++k) {
            const Lane& out = m_spec.output[k];
            PeState& pe = fabric.pe(frame.x(m_spec.firstColumn + t), out.y);
            m_acc[std::size_t(t) * blocks + k] = std::int32_t(pe.allocF32(out.size()));
            std::uint32_t block = pe.allocF16(std::size_t(out.size()) * total); // the shares' blocks in turn
            m_block[std::size_t(t) * blocks + k] = std::int32_t(block);
            for (const Share& share : shares) {
                const Lane& in = m_spec.input[share.lane];
                for (std::uint32_t j = 0; j < share.use; ++j)
                    for (std::uint32_t i = 0; i < out.size(); ++i)
                        pe.f16[block + j * out.size() + i]
                            = encode(m_spec.weight.at(out.begin + i, in.begin + share.skip + j), m_context);
                block += share.use * out.size();
            }
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
        m_combine.push_back(m_spec.epilogue == Epilogue::Combine ? pe.allocF32(out.size()) : 0);
    }
    { // a buffer per PE and lane for the input it keeps
        for (int t = 0; t < gemvColumns(); ++t) {
            for (const Share& share : sharesOf(t)) {
                if (!buffered(share))
                    continue;
                for (int row = 0; row < frame.h; ++row) {
                    const bool turnsHere = m_spec.input[share.lane].y - frame.y0 == row;
                    if (!turnsHere && outputAt(row) < 0)
                        continue;
                    const int x = frame.x(m_spec.firstColumn + t);
                    m_buffer[{ x, frame.y(row), int(share.turn) }]
                        = fabric.pe(x, frame.y(row)).allocF32(m_spec.input[share.lane].size());
                }
            }
        }
    }
    const bool routeOut = m_spec.epilogue == Epilogue::Route;
    if (m_spec.expert >= 0 || routeOut)
        for (const Pe& at : m_spec.expert >= 0 ? workers() : std::vector<Pe> { exit(0) })
            m_weightsAt.push_back(fabric.pe(at.x, at.y).allocF32(std::size_t(m_spec.experts)));
}

// Dispatch: the workers take the token's input into SRAM as it comes (the router has not decided
// yet, and the stream must not wait for it), then the routing weights; only the chosen experts
// then multiply. Returns each worker's routing weights' offset.
GemvKernel::RoutingAt GemvKernel::armRoutingWeights(ProgramWriter& writer, int weightsColor) const
{
    RoutingAt weightsOf;
    if (m_spec.expert < 0)
        return weightsOf;
    const std::vector<Pe> pes = workers();
    for (std::size_t i = 0; i < pes.size(); ++i) {
        weightsOf[{ pes[i].x, pes[i].y }] = m_weightsAt[i];
        writer.arm(pes[i].x, pes[i].y, weightsColor, storeTask(m_weightsAt[i], std::uint32_t(m_spec.experts)));
    }
    return weightsOf;
}

void GemvKernel::program(ProgramWriter& writer, const KernelColors& colors, std::int64_t position) const
{
    const Frame& frame = m_spec.frame;
    const RoutingAt weightsOf = armRoutingWeights(writer, colors.weights);
    const std::size_t blocks = m_spec.output.size();
    const int columns = gemvColumns();
    for (int t = 0; t < columns; ++t) {
        const int x = frame.x(m_spec.firstColumn + t);
        const std::vector<Share> shares = sharesOf(t);
        for (int row = 0; row < frame.h; ++row) {
            const int k = outputAt(row);
            bool isTurn = false;
            for (const Share& share : shares)
                isTurn = isTurn || m_spec.input[share.lane].y - frame.y0 == row;
            if (k < 0 && !isTurn)
                continue;
            const int y = frame.y(row);
            const bool isExit = k >= 0 && t + 1 == columns;
            if (isExit && hasSideInput())
                writer.arm(x, y, colors.side, storeTask(m_side[std::size_t(k)], m_spec.output[std::size_t(k)].size()));
            Cell cell { t, x, y, k, 0, 0 };
            if (k >= 0) {
                cell.size = m_spec.output[std::size_t(k)].size();
                cell.acc = std::uint32_t(m_acc[std::size_t(t) * blocks + std::size_t(k)]);
                writer.compute(x, y, steps::zero, steps::elementwiseCycles(cell.size, 1, m_context.simdWidth), cell.acc,
                    cell.size);
            }
            programInputs(writer, colors, cell, shares, weightsOf);
            if (k < 0)
                continue;
            programReduction(writer, cell);
            if (isExit)
                programExit(writer, colors, cell, position, weightsOf);
        }
    }
}

// A task per lane of the cell's column: on the lane's own stream at its turn PE (which turns it
// down the column), on the lane's turn color elsewhere; then the FMACs of the lanes kept in SRAM
// (a dispatched expert's only if the routing weights choose it).
void GemvKernel::programInputs(ProgramWriter& writer, const KernelColors& colors, const Cell& cell,
    const std::vector<Share>& shares, const RoutingAt& weightsOf) const
{
    const Frame& frame = m_spec.frame;
    const int x = cell.x;
    const int y = cell.y;
    const int row = y - frame.y0;
    std::vector<int> awaited;
    struct Deferred {
        std::uint32_t buffer;
        std::uint32_t use;
        std::uint32_t block;
    };
    std::vector<Deferred> later;
    const std::size_t blocks = m_spec.output.size();
    std::uint32_t block = cell.k >= 0 ? std::uint32_t(m_block[std::size_t(cell.t) * blocks + std::size_t(cell.k)]) : 0;
    for (const Share& share : shares) {
        const std::uint32_t shareBlock = block;
        block += share.use * cell.size;
        const int turnRow = m_spec.input[share.lane].y - frame.y0;
        const bool turnsHere = turnRow == row;
        const int turnColor = m_column[share.turn];
        if (!turnsHere && (cell.k < 0 || turnColor < 0))
            continue;
        DataTask fmac;
        fmac.kind = TaskKind::FmacColumn;
        fmac.expected = m_spec.input[share.lane].size();
        fmac.skip = share.skip;
        fmac.use = share.use;
        fmac.format = m_context.format();
        const bool multicasts = m_firstRow < turnRow || m_lastRow > turnRow; // else no other output row
        fmac.outColor = std::uint8_t(turnsHere && multicasts ? turnColor : kNoColor);
        if (cell.k >= 0) {
            fmac.vector = cell.acc;
            fmac.length = cell.size;
            fmac.matrix = shareBlock;
        }
        const int color = turnsHere ? colors.in : turnColor;
        if (buffered(share)) { // into SRAM now, multiplied once the lane has passed (or the expert is chosen)
            const std::uint32_t buffer = m_buffer.at({ x, y, int(share.turn) });
            writer.arm(x, y, color, storeTask(buffer, fmac.expected, fmac.outColor));
            if (cell.k >= 0)
                later.push_back({ buffer + share.skip, share.use, shareBlock });
        } else {
            writer.arm(x, y, color, fmac);
        }
        awaited.push_back(color);
    }
    for (const int color : awaited)
        writer.await(x, y, color);
    const std::uint64_t perUse = steps::elementwiseCycles(cell.size, 1, m_context.simdWidth);
    const bool dispatch = m_spec.expert >= 0;
    if (dispatch) {
        writer.await(x, y, colors.weights);
        writer.compute(x, y, steps::selectExpert, 1, weightsOf.at({ x, y }), std::uint32_t(m_spec.expert));
    }
    for (const Deferred& work : later) {
        if (dispatch)
            writer.computeIf(x, y, steps::fmacFromBuffer, work.use * perUse, work.buffer, work.use, work.block,
                cell.acc, float(cell.size), m_context.flags());
        else
            writer.compute(x, y, steps::fmacFromBuffer, work.use * perUse, work.buffer, work.use, work.block, cell.acc,
                float(cell.size), m_context.flags());
    }
}

// The output row's partial sums toward its exit: along the chain, or the tree's levels (each
// child's vector whole, the last child's sums forwarded).
void GemvKernel::programReduction(ProgramWriter& writer, const Cell& cell) const
{
    const int columns = gemvColumns();
    const int t = cell.t;
    if (columns > 1 && m_spec.treeReduced) {
        const ReductionTreeNode node = reductionTreeNode(columns - 1 - t, columns);
        const int send = node.sendLevel >= 0 ? m_tree[std::size_t(node.sendLevel)] : kNoColor;
        for (std::size_t i = 0; i < node.childLevels.size(); ++i)
            writer.armAndAwait(cell.x, cell.y, m_tree[std::size_t(node.childLevels[i])],
                addTask(cell.acc, cell.size, i + 1 == node.childLevels.size() ? send : kNoColor));
        if (node.childLevels.empty())
            writer.send(cell.x, cell.y, send, cell.acc, cell.size);
    } else if (columns > 1) {
        if (t == 0)
            writer.send(cell.x, cell.y, m_chain[0], cell.acc, cell.size);
        else
            writer.armAndAwait(cell.x, cell.y, m_chain[(t - 1) % 2],
                addTask(cell.acc, cell.size, t + 1 < columns ? m_chain[t % 2] : kNoColor));
    }
}

// The epilogue at an output lane's exit, then the lane sent on.
void GemvKernel::programExit(ProgramWriter& writer, const KernelColors& colors, const Cell& cell, std::int64_t position,
    const RoutingAt& weightsOf) const
{
    const int x = cell.x;
    const int y = cell.y;
    const auto k = std::size_t(cell.k);
    const std::uint32_t acc = cell.acc;
    const std::uint32_t size = cell.size;
    const std::uint32_t result = m_result[k];
    const std::uint32_t bias = m_biasAt[k];
    const std::uint32_t side = m_side[k];
    const int simd = m_context.simdWidth;
    const std::uint8_t flags = std::uint8_t(m_context.flags() | (m_spec.bias.present() ? steps::kBias : 0));
    const auto cycles = [&](int ops) { return steps::elementwiseCycles(size, ops, simd); };
    const auto biasRound
        = [&] { writer.compute(x, y, steps::biasRound, cycles(1), acc, size, bias, result, 0.0f, flags); };
    const float activation = float(int(m_spec.activation));
    switch (m_spec.epilogue) {
    case Epilogue::Round:
        biasRound();
        break;
    case Epilogue::Rotary:
        biasRound();
        writer.compute(
            x, y, steps::rotary, cycles(6), result, size, std::uint32_t(position), 0, float(m_spec.ropeTheta), flags);
        break;
    case Epilogue::Residual:
        biasRound();
        writer.await(x, y, colors.side);
        writer.compute(x, y, steps::residual, cycles(1), result, size, side, result, 0.0f, flags);
        break;
    case Epilogue::Activation:
        biasRound();
        writer.compute(x, y, steps::activation, cycles(8), result, size, 0, 0, activation, flags);
        break;
    case Epilogue::Gated:
        biasRound();
        writer.await(x, y, colors.side);
        writer.compute(x, y, steps::gated, cycles(8), result, size, side, result, activation, flags);
        break;
    case Epilogue::Logits:
        writer.compute(x, y, steps::biasOnly, cycles(1), acc, size, bias, result, 0.0f, flags);
        programArgmax(writer, cell);
        break;
    case Epilogue::Route:
        writer.compute(x, y, steps::biasOnly, cycles(1), acc, size, bias, result, 0.0f, flags);
        writer.compute(x, y, steps::route, cycles(12), result, size, 0, m_weightsAt.front(), float(m_spec.topK));
        if (colors.out >= 0)
            writer.send(x, y, colors.out, m_weightsAt.front(), size);
        break;
    case Epilogue::Combine:
        biasRound();
        programCombine(writer, colors, cell, weightsOf.at({ x, y }) + std::uint32_t(m_spec.expert), flags);
        break;
    }
    const bool sends = m_spec.epilogue != Epilogue::Logits && m_spec.epilogue != Epilogue::Route
        && (m_spec.epilogue != Epilogue::Combine || m_spec.lastExpert);
    if (colors.out >= 0 && sends)
        writer.send(x, y, colors.out, result, size);
}

// Logits: the lane's (best value, token id), combined with the pair from the exit above and sent
// to the exit below.
void GemvKernel::programArgmax(ProgramWriter& writer, const Cell& cell) const
{
    const auto k = std::size_t(cell.k);
    const std::uint32_t pair = m_pair[k];
    writer.compute(cell.x, cell.y, steps::localArgmax, steps::elementwiseCycles(cell.size, 1, m_context.simdWidth),
        m_result[k], cell.size, pair, m_spec.output[k].begin);
    const int argmax[2] = { m_argmax & 0xff, m_argmax >> 8 };
    if (k > 0) {
        writer.armAndAwait(cell.x, cell.y, argmax[(k - 1) % 2], storeTask(pair + 2, 2));
        writer.compute(cell.x, cell.y, steps::argmaxCombine, 1, pair + 2, 0, pair);
    }
    if (k + 1 < m_spec.output.size())
        writer.send(cell.x, cell.y, argmax[k % 2], pair, 2);
}

// Combine: the expert's output times its routing weight joins the running sum from the previous
// expert's exit and goes on to the next; the last rounds it and adds the residual.
void GemvKernel::programCombine(ProgramWriter& writer, const KernelColors& colors, const Cell& cell,
    std::uint32_t routingWeight, std::uint8_t flags) const
{
    const auto k = std::size_t(cell.k);
    const std::uint32_t weighted = m_combine[k];
    const std::uint32_t size = cell.size;
    const std::uint64_t cycles = steps::elementwiseCycles(size, 1, m_context.simdWidth);
    writer.compute(cell.x, cell.y, steps::scaleByWeight, cycles, m_result[k], size, routingWeight, weighted);
    if (m_spec.expert > 0)
        writer.armAndAwait(cell.x, cell.y, colors.combineIn,
            addTask(weighted, size, m_spec.lastExpert ? kNoColor : colors.combineOut));
    else if (!m_spec.lastExpert)
        writer.send(cell.x, cell.y, colors.combineOut, weighted, size);
    if (m_spec.lastExpert) {
        writer.compute(cell.x, cell.y, steps::roundInPlace, cycles, weighted, size, 0, 0, 0.0f, flags);
        writer.await(cell.x, cell.y, colors.side);
        writer.compute(cell.x, cell.y, steps::residual, cycles, weighted, size, m_side[k], m_result[k], 0.0f, flags);
    }
}

KernelCost GemvKernel::closedForm(std::int64_t) const
{
    return costDecodeGemv(m_spec, m_context.simdWidth);
}

} // namespace waferscope::core::cyclelevel
