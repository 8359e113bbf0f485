#pragma once

// Private to XyFabric: the layout of its state and the switch of one row of routers.
#include "core/fabric/wavelet.h"
#include "core/fabric/xyfabric.h"

#include <cstdint>

namespace waferscope::core::fabric {

struct TrafficGenerator;

namespace xy {

// Per-link counters, double buffered, ten byte fields per router:
//
//   field d     (d < 4)  wavelets the router has sent on its link in direction d,
//   field 4              wavelets it has put into its own ramp queue,
//   field 5 + q          wavelets it has taken from its queue q (N, S, E, W, ramp),
//
// each counting modulo 128, so queue q of a router holds (writer's sent - read) & 127 wavelets,
// and the wavelets themselves sit in the ring slots (sent & slots - 1) of the receiver.
constexpr int kQueues = 5; // input ports N, S, E, W and the ramp, indexed like Direction
constexpr int kRamp = Wavelet::kRampPort;
constexpr int kSentField = 0; // + direction, or + kRamp
constexpr int kReadField = 5; // + queue
constexpr int kCounterFields = 10;
constexpr unsigned kCounterMask = 0x7f; // counters count modulo 128
constexpr int kLanes = 16; // routers decided together
constexpr int kMaxWidth = int(Wavelet::kCoordMask) + 1;
// Pending byte counts (XyFabric::m_pendingCounts), one plane each: a router adds at most 5 a
// cycle to any of them, so a row's counts are flushed every kFlushEvery steps of the row.
constexpr int kRoutedCount = 0;
constexpr int kBusyCount = 1;
constexpr int kStallCount = 2;
constexpr int kLinkCount = 3; // + direction
constexpr int kLinkStallCount = 7; // + direction
constexpr std::uint32_t kFlushEvery = 32;
static_assert(XyFabric::kPendingFields == kLinkStallCount + kDirections);

// Where one cycle's state lives, for every row alike: each array at counter index 0 (a row's
// routers are at its first index + x), for the current and the next buffer.
struct CyclePlan {
    int width = 0;
    int depth = 0;
    int slots = 0;
    std::int64_t field = 0; // distance between two fields of a row (or two ring slot planes)
    std::uint64_t cycle = 0;
    const std::uint8_t* read[kQueues] {}; // wavelets taken from queue q
    std::uint8_t* nextRead[kQueues] {};
    const std::uint8_t* written[kQueues] {}; // wavelets put into it, by the neighbour it comes from or the ramp
    const std::uint8_t* heads[kQueues] {}; // the queue's slot-0 port-bit plane, at slot index 0
    const std::uint8_t* sent[kQueues] {}; // wavelets sent on each link, and put into the ramp queue
    std::uint8_t* nextSent[kQueues] {};
    const std::uint8_t* receiverRead[kDirections] {}; // the neighbour's counter of the queue a link fills
    std::uint8_t* pending[XyFabric::kPendingFields] {};
    std::int64_t queuePlane[kQueues] {}; // the queue's slot-0 plane in the rings, at slot index 0
    std::int64_t receiverPlane[kDirections] {}; // the slot-0 plane of the queue a link fills, relative to the sender
    int order[kQueues] {}; // round-robin priority: the queue served first turns every cycle, the same for all routers
    Wavelet* rings = nullptr;
    std::uint8_t* portBits = nullptr;
    const TrafficGenerator* measure = nullptr; // set when this cycle is in the measurement window
};

// One row of a cycle.
struct RowStep {
    std::int64_t first = 0; // counter index of the row's first router
    std::int64_t firstSlot = 0; // its slot index
    const std::uint8_t* injected = nullptr; // per x: 1 where the PE put a packet into its ramp queue
    bool northShared = false; // the row above (below) is stepped by another band at the same time
    bool southShared = false;
    std::uint16_t* moves = nullptr; // scratch: room for kQueues * width + kLanes entries
};

struct RowOutcome {
    bool active = false; // anything was queued at the start of the cycle
    std::uint64_t ejected = 0; // in the measurement window
    std::uint64_t latencyPackets = 0;
    std::uint64_t latencySum = 0;
};

// One cycle of the routers of a row: decides every router's moves, writes the row's next
// counters and adds to its pending counts, then makes the moves (writes the wavelets into the
// receivers' rings, or ejects them).
RowOutcome switchRow(const CyclePlan& plan, const RowStep& row);

} // namespace xy

} // namespace waferscope::core::fabric
