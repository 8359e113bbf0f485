#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace waferscope::core::fabric {

class Fabric;

// What the GUI draws of a running fabric: activity per PE and traffic per link over the
// interval since the previous frame. Immutable once published.
struct FabricFrame {
    std::uint64_t generation = 0; // increases by one per published frame
    std::uint64_t cycle = 0; // fabric cycle at the end of the interval
    std::uint64_t intervalCycles = 0;
    int width = 0;
    int height = 0;
    std::vector<float> peActivity; // per PE, 0..1: share of the interval its router or its PE was busy
    std::vector<std::uint32_t> linkWavelets; // per PE and direction (pe * 4 + N/S/E/W): wavelets sent
};

// Samples frames on the simulation thread (publish, between steps) and hands the newest to
// reader threads (latest) without stopping or slowing the simulation: readers get a
// shared_ptr to an immutable frame and never touch the fabric.
class FramePublisher {
public:
    void publish(const Fabric& fabric);
    std::shared_ptr<const FabricFrame> latest() const;

private:
    mutable std::mutex m_mutex;
    std::shared_ptr<const FabricFrame> m_latest;
    std::uint64_t m_generation = 0;
    std::uint64_t m_lastCycle = 0;
    std::vector<std::uint32_t> m_lastRouterBusy;
    std::vector<std::uint64_t> m_lastPeBusy;
    std::vector<std::uint32_t> m_lastLinks;
};

} // namespace waferscope::core::fabric
