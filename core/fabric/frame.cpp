#include "core/fabric/frame.h"

#include "core/fabric/staticcolorfabric.h"

#include <algorithm>

namespace waferscope::core::fabric {

void FramePublisher::publish(const Fabric& fabric)
{
    const auto pes = std::size_t(fabric.peCount());
    if (m_lastRouterBusy.size() != pes) {
        m_lastRouterBusy.assign(pes, 0);
        m_lastPeBusy.assign(pes, 0);
        m_lastLinks.assign(pes * kDirections, 0);
        m_lastCycle = 0;
    }
    auto frame = std::make_shared<FabricFrame>();
    frame->cycle = fabric.cycle();
    frame->intervalCycles = fabric.cycle() - m_lastCycle;
    frame->width = fabric.width();
    frame->height = fabric.height();
    frame->peActivity.resize(pes);
    frame->linkWavelets.resize(pes * kDirections);
    const double interval = double(std::max<std::uint64_t>(1, frame->intervalCycles));
    const CounterVector& routerBusy = fabric.routerBusyCycles();
    // Only kernels compute on the PEs; synthetic traffic keeps them idle.
    const auto* kernelFabric = dynamic_cast<const StaticColorFabric*>(&fabric);
    for (std::size_t pe = 0; pe < pes; ++pe) {
        double busy = double(routerBusy[pe] - m_lastRouterBusy[pe]);
        m_lastRouterBusy[pe] = routerBusy[pe];
        if (kernelFabric) {
            const PeState& state
                = kernelFabric->pe(int(pe % std::size_t(fabric.width())), int(pe / std::size_t(fabric.width())));
            busy = std::max(busy, double(state.busyCycles - m_lastPeBusy[pe]));
            m_lastPeBusy[pe] = state.busyCycles;
        }
        frame->peActivity[pe] = float(std::min(1.0, busy / interval));
    }
    const CounterVector& links = fabric.linkWavelets();
    for (std::size_t i = 0; i < links.size(); ++i) {
        frame->linkWavelets[i] = links[i] - m_lastLinks[i];
        m_lastLinks[i] = links[i];
    }
    m_lastCycle = fabric.cycle();
    std::lock_guard lock(m_mutex);
    frame->generation = ++m_generation;
    m_latest = std::move(frame);
}

std::shared_ptr<const FabricFrame> FramePublisher::latest() const
{
    std::lock_guard lock(m_mutex);
    return m_latest;
}

} // namespace waferscope::core::fabric
