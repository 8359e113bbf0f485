// No header of its own: defines WaferDecoder's token-running members (waferdecoderimpl.h).
// Running a built decoder: one token's programs, the run, and what it measured.
#include "core/cyclelevel/waferdecoderimpl.h"

#include <algorithm>
#include <bit>
#include <chrono>

namespace waferscope::core::cyclelevel {

using namespace fabric;

WaferDecoder::WaferDecoder()
    : m_impl(std::make_unique<Impl>())
{
}

WaferDecoder::~WaferDecoder() = default;

const DecoderShape& WaferDecoder::shape() const
{
    return m_impl->shape;
}

const DecoderWeights& WaferDecoder::weights() const
{
    return m_impl->weights;
}

const Fabric& WaferDecoder::fabric() const
{
    return *m_impl->fabric;
}

int WaferDecoder::colorsAtBusiestRouter() const
{
    return m_impl->routes->maxColorsAtARouter();
}

std::size_t WaferDecoder::hostBytes() const
{
    return m_impl->fabric->memoryBytes();
}

std::size_t WaferDecoder::peakSramBytesPerPe() const
{
    std::int64_t peak = 0;
    const StaticColorFabric& fabric = *m_impl->fabric;
    for (int y = 0; y < fabric.height(); ++y)
        for (int x = 0; x < fabric.width(); ++x)
            peak = std::max(peak, fabric.pe(x, y).sramBytes());
    return std::size_t(peak);
}

std::string WaferDecoder::Impl::describeStuck() const
{
    static constexpr const char* kinds[] = { "arm", "await", "send", "await send", "compute", "mark", "compute if" };
    std::string text;
    int shown = 0;
    for (const Measured& region : measured) {
        for (int v = 0; v < region.frame.h && shown < 6; ++v) {
            for (int u = 0; u < region.frame.w && shown < 6; ++u) {
                const PeState& pe = fabric->pe(region.frame.x(u), region.frame.y(v));
                if (pe.programDone())
                    continue;
                const Step& step = pe.program[pe.pc];
                text += (shown ? "; " : "") + region.op + " PE (" + std::to_string(u) + ", " + std::to_string(v)
                    + ") at step " + std::to_string(pe.pc) + "/" + std::to_string(pe.program.size()) + " ("
                    + kinds[int(step.kind)] + " color " + std::to_string(int(step.color)) + ", received "
                    + (step.color < pe.tasks.size() ? std::to_string(pe.tasks[step.color].received) + "/"
                                + std::to_string(pe.tasks[step.color].expected)
                                                    : std::string("-"))
                    + ")";
                ++shown;
            }
        }
    }
    return (text.empty() ? std::string() : text + "; ") + "backlog:" + fabric->describeBacklog(6);
}

void WaferDecoder::Impl::programToken(ProgramWriter& writer, std::int64_t position, bool fromHost)
{
    writer.clearPrograms();
    const auto relay = [&](const Turn& turn) {
        for (std::size_t i = 0; i < turn.relays.size(); ++i)
            writer.arm(turn.relays[i].x, turn.relays[i].y, turn.down, relayTask(turn.sizes[i], turn.along));
    };
    for (const Layer& block : layers)
        relay(block.in);
    relay(intoHead);
    // A fed-back token starts as the previous token's argmax leaves the LM head for the root.
    if (!fromHost) {
        const Pe at = lmHead->argmaxPe();
        writer.send(at.x, at.y, feedbackColor, lmHead->argmaxOffset() + 1, 1);
    }
    embedding->program(writer, { .in = fromHost ? hostColor : feedbackColor, .out = layers.front().in.down }, position);
    for (std::size_t layer = 0; layer < layers.size(); ++layer) {
        const Layer& block = layers[layer];
        const int next = layer + 1 < layers.size() ? layers[layer + 1].in.down : intoHead.down;
        block.norm1->program(writer, { .in = block.in.along, .out = block.a }, position);
        block.q->program(writer, { .in = block.a, .out = block.qs }, position);
        block.k->program(writer, { .in = block.a, .out = block.ks }, position);
        block.v->program(writer, { .in = block.a, .out = block.vs }, position);
        block.attention->program(
            writer, { .in = block.qs, .out = block.o, .keys = block.ks, .values = block.vs }, position);
        block.out->program(writer, { .in = block.o, .side = block.in.along, .out = block.x2 }, position);
        block.norm3->program(writer, { .in = block.x2, .out = block.b }, position);
        if (block.router)
            block.router->program(writer, { .in = block.b, .out = block.weights }, position);
        for (std::size_t e = 0; e < block.ffn.size(); ++e) {
            const Ffn& ffn = block.ffn[e];
            KernelColors colors;
            colors.weights = block.weights;
            colors.in = block.b;
            colors.out = ffn.u;
            ffn.up->program(writer, colors, position);
            if (ffn.gate) {
                colors.side = ffn.u;
                colors.out = ffn.h;
                ffn.gate->program(writer, colors, position);
            }
            colors.in = ffn.gate ? ffn.h : ffn.u;
            const bool last = e + 1 == block.ffn.size();
            colors.side = last ? block.x2 : -1;
            colors.out = last ? next : -1;
            colors.combineIn = e > 0 ? block.ffn[e - 1].combine : -1;
            colors.combineOut = ffn.combine;
            ffn.down->program(writer, colors, position);
        }
    }
    finalNorm->program(writer, { .in = intoHead.along, .out = f }, position);
    lmHead->program(writer, { .in = f }, position);
    // Every PE with work marks when it finishes.
    for (const Measured& region : measured)
        for (int v = 0; v < region.frame.h; ++v)
            for (int u = 0; u < region.frame.w; ++u)
                if (!writer.pe(region.frame.x(u), region.frame.y(v)).program.empty())
                    writer.mark(region.frame.x(u), region.frame.y(v), 0);
}

Expected<std::uint64_t> WaferDecoder::Impl::runPrograms(std::int64_t position)
{
    fabric->startPrograms();
    const std::uint64_t first = fabric->cycle();
    std::optional<Diagnostic> failure;
    fabric->runWhile([&] {
        const std::uint64_t cycle = fabric->cycle() - first;
        if (cycle % observeEveryCycles == 0 && observer && !observer(*fabric, position)) {
            failure = Diagnostic { "--level", 0, 0, "cancelled", Diagnostic::Kind::CannotMap };
            return false;
        }
        if (cycle % 64 != 0)
            return true;
        const std::int64_t pending = fabric->pendingPrograms();
        if (pending == 0 && cycle <= cycleLimit)
            return !fabric->quiescent();
        if ((cycle % 4096 == 0 && fabric->quiescent()) || cycle > cycleLimit) {
            failure = Diagnostic { "--level", 0, 0,
                "internal error: the token stalled at cycle " + std::to_string(cycle) + " with "
                    + std::to_string(pending) + " PE programs unfinished; " + describeStuck(),
                Diagnostic::Kind::Internal };
            return false;
        }
        return true;
    });
    if (failure)
        return *failure;
    return fabric->cycle() - first;
}

Expected<TokenOnFabric> WaferDecoder::decode(std::int64_t position, std::int32_t token, bool fromHost)
{
    Impl& impl = *m_impl;
    StaticColorFabric& fabric = *impl.fabric;
    const auto start = std::chrono::steady_clock::now();
    if (fromHost) {
        const Pe root = impl.embedding->root();
        fabric.feedEdgeSource(root.x, root.y, Wavelet::colored(impl.hostColor, std::uint32_t(token)));
    }
    ProgramWriter writer(fabric);
    impl.programToken(writer, position, fromHost);
    if (!impl.validated) { // routes against the tasks the programs arm (the same every token)
        if (const std::optional<std::string> error = fabric.validateRoutes())
            return Diagnostic { "--level", 0, 0, "internal route error: " + *error, Diagnostic::Kind::Internal };
        impl.validated = true;
    }
    // Counters before the token, per PE of each measured region.
    std::vector<std::vector<std::uint64_t>> busyBefore;
    std::vector<std::uint64_t> linksBefore;
    const CounterVector& links = fabric.linkWavelets();
    for (const Impl::Measured& region : impl.measured) {
        std::uint64_t linkSum = 0;
        std::vector<std::uint64_t> busy;
        for (int v = 0; v < region.frame.h; ++v)
            for (int u = 0; u < region.frame.w; ++u) {
                const auto pe
                    = std::size_t(region.frame.y(v)) * std::size_t(fabric.width()) + std::size_t(region.frame.x(u));
                for (int d = 0; d < kDirections; ++d)
                    linkSum += links[pe * kDirections + std::size_t(d)];
                busy.push_back(fabric.pe(region.frame.x(u), region.frame.y(v)).busyCycles);
            }
        linksBefore.push_back(linkSum);
        busyBefore.push_back(std::move(busy));
    }
    Expected<std::uint64_t> ran = impl.runPrograms(position);
    if (!ran)
        return ran.error();
    const std::uint64_t first = fabric.cycle() - *ran;
    TokenOnFabric result;
    result.position = position;
    result.input = token;
    result.cycles = *ran;
    const Pe best = impl.lmHead->argmaxPe();
    result.output
        = std::int32_t(std::bit_cast<std::uint32_t>(fabric.pe(best.x, best.y).f32[impl.lmHead->argmaxOffset() + 1]));
    result.logits.resize(std::size_t(impl.shape.vocab));
    const GemvSpec& head = impl.lmHead->spec();
    for (std::size_t k = 0; k < head.output.size(); ++k) {
        const Pe at = impl.lmHead->exit(k);
        const PeState& pe = fabric.pe(at.x, at.y);
        for (std::uint32_t i = 0; i < head.output[k].size(); ++i)
            result.logits[head.output[k].begin + i] = pe.f32[impl.lmHead->resultOffset(k) + i];
    }
    const CounterVector& linksAfter = fabric.linkWavelets();
    std::uint64_t previous = 0;
    for (std::size_t r = 0; r < impl.measured.size(); ++r) {
        const Impl::Measured& region = impl.measured[r];
        RegionCycles cycles;
        cycles.op = region.op;
        cycles.kernel = region.kernel;
        std::uint64_t linkSum = 0;
        std::uint64_t busy = 0;
        std::uint64_t finish = 0;
        std::size_t index = 0;
        for (int v = 0; v < region.frame.h; ++v)
            for (int u = 0; u < region.frame.w; ++u) {
                const auto pe
                    = std::size_t(region.frame.y(v)) * std::size_t(fabric.width()) + std::size_t(region.frame.x(u));
                for (int d = 0; d < kDirections; ++d)
                    linkSum += linksAfter[pe * kDirections + std::size_t(d)];
                const PeState& state = fabric.pe(region.frame.x(u), region.frame.y(v));
                busy += state.busyCycles - busyBefore[r][index++];
                if (!state.program.empty() && !state.marks.empty())
                    finish = std::max<std::uint64_t>(finish, state.marks[0] - first);
            }
        if (region.router) {
            const Pe exit = region.router->exit(0);
            const PeState& at = fabric.pe(exit.x, exit.y);
            for (int e = 0; e < int(impl.shape.experts); ++e)
                if (at.f32[region.router->routingOffset() + std::uint32_t(e)] != 0.0f)
                    cycles.expertsChosen.push_back(e);
        }
        cycles.pes = std::int64_t(region.frame.w) * region.frame.h;
        cycles.finishCycle = finish;
        cycles.measuredCycles = finish > previous ? finish - previous : 0;
        previous = std::max(previous, finish);
        cycles.linkWavelets = linkSum - linksBefore[r];
        cycles.busyFraction
            = cycles.measuredCycles > 0 ? double(busy) / (double(cycles.pes) * double(cycles.measuredCycles)) : 0.0;
        result.regions.push_back(cycles);
    }
    result.wallS = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

} // namespace waferscope::core::cyclelevel
