#include "core/cyclelevel/waferdecoder.h"

#include "core/cyclelevel/waferdecoderbuilder.h"
#include "core/fabric/staticcolorfabric.h"

#include <algorithm>

namespace waferscope::core::cyclelevel {

using namespace fabric;

std::int64_t WaferDecoder::estimateHostBytes(const ExecutionPlan& plan, const SystemSpec& system)
{
    // Router queues and state, the PE's task table and program, then the weights and cache the
    // plan puts in SRAM (held as the simulated SRAM).
    const std::int64_t pes = plan.usable.area();
    const std::int64_t perPe = std::int64_t(system.wafer.routableColors) * (4 * 8 + 2 + 2) + 64 + 200
        + std::int64_t(system.wafer.routableColors) * std::int64_t(sizeof(DataTask)) + 40 * 8;
    std::int64_t sram = 0;
    for (const Region& region : plan.regions)
        sram += region.weightBytes + region.kvCacheBytes / 16;
    return pes * perPe + sram;
}

Expected<std::unique_ptr<WaferDecoder>> WaferDecoder::build(
    const ModelGraph& graph, const ExecutionPlan& plan, const SystemSpec& system, const FabricDecodeOptions& options)
{
    Expected<DecoderShape> shape = decoderShape(graph);
    if (!shape)
        return shape.error();
    if (plan.mode != ExecutionMode::Inference)
        return refuse("--level", "the cycle-level run executes inference plans; compile with --mode inference");
    if (plan.numSystems != 1)
        return refuse("--level",
            "the plan needs " + std::to_string(plan.numSystems)
                + " wafers; the cycle-level run executes single-wafer plans");
    if (options.capacity > shape->maxPositions)
        return refuse("--tokens",
            "prompt and generated tokens need " + std::to_string(options.capacity) + " positions; the model has "
                + std::to_string(shape->maxPositions));

    std::unique_ptr<WaferDecoder> decoder(new WaferDecoder());
    Impl& impl = *decoder->m_impl;
    impl.shape = *shape;
    impl.weights = DecoderWeights(*shape, options.seed);
    impl.context.storage = shape->storage;
    impl.context.simdWidth = system.wafer.fmacPerPePerCycle;
    impl.observer = options.observer;
    impl.observeEveryCycles = std::max<std::uint64_t>(1, options.observeEveryCycles);
    impl.cycleLimit = options.maxCyclesPerToken;
    Impl::Builder builder(impl, graph, plan, options);
    if (auto error = builder.findRegions())
        return *error;
    // Lanes of the hidden vector: a row each, in every strip; a column each where a region turns
    // them (after its norm column), and a chain each in the embedding. The compiler decided the
    // layout (core/compiler/decodelayout.h), which the engine times too.
    impl.layout = decodeLayoutFor(graph, plan);
    impl.lanes = impl.layout.hiddenLanesOn(0);
    if (impl.lanes < 1)
        return refuse("--level", "the plan's regions are too narrow for the decode kernels");

    FabricConfig config;
    config.width = plan.usable.w;
    config.height = plan.usable.h;
    config.colors = std::clamp(system.wafer.routableColors, 1, kMaxColors);
    config.queueDepth = options.queueDepth;
    config.simdWidth = system.wafer.fmacPerPePerCycle;
    impl.fabric = std::make_unique<StaticColorFabric>(config);
    impl.fabric->setThreads(options.threads);
    impl.routes = std::make_unique<RouteBook>(*impl.fabric);
    try {
        builder.buildEmbedding();
        for (int layer = 0; layer < int(shape->layers); ++layer) {
            if (auto error = builder.checkBlock(layer))
                return *error;
            Impl::Layer block;
            builder.buildAttention(layer, block);
            if (shape->experts > 0)
                builder.buildExperts(layer, block);
            else
                builder.buildFeedForward(layer, block);
            impl.layers.push_back(std::move(block));
        }
        builder.buildHead();
        builder.routeKernels();
        for (std::size_t layer = 0; layer < impl.layers.size(); ++layer)
            builder.connectBlock(layer);
        builder.connectHead();
        builder.connectTokenIds();
    } catch (const RouteError& error) {
        return refuse("--level", std::string("the plan's streams do not fit the fabric's colors: ") + error.what());
    } catch (const std::logic_error& error) {
        return refuse("--level", std::string("the plan cannot be built on the fabric: ") + error.what());
    }
    builder.loadSram();
    if (const auto peak = std::int64_t(decoder->peakSramBytesPerPe()); peak > system.wafer.sramPerPeBytes)
        return refuse("--level",
            "a PE would hold " + std::to_string(peak) + " bytes; the wafer's PEs have "
                + std::to_string(system.wafer.sramPerPeBytes));
    if (options.prefillTokens > 0)
        if (std::optional<std::string> why = builder.buildPrefill(system.wafer.sramPerPeBytes))
            impl.prefillRefusal = *why;
    return decoder;
}

} // namespace waferscope::core::cyclelevel
