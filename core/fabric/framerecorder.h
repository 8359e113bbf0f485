#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace waferscope::core::fabric {

class Fabric;

// One window of cycles of a running fabric, measured from its counters and kept compact: a full
// WSE-2 frame is 5 bytes per PE (about 3.7 MB for 750 x 994 PEs) instead of the 20 of a
// FabricFrame. Immutable once recorded.
struct CompactFrame {
    std::uint64_t cycle = 0; // fabric cycle at the end of the window
    std::uint64_t intervalCycles = 0;
    std::string phase; // what the run was doing ("prefill", "decode")
    std::int64_t position = 0; // the token position the fabric was working on
    std::uint64_t tokenCycle = 0; // cycles into that token at the end of the window
    // Per PE of the recorded rectangle (row-major), 0..255 for 0..1: the share of the window its
    // router or its engine was busy.
    std::vector<std::uint8_t> activity;
    // Per PE and direction (pe * 4 + N/S/E/W), 0..255 for 0..1 wavelets per cycle on the link.
    std::vector<std::uint8_t> linkLoad;
};

// The frames of one run, at most `capacity` of them: when a frame would exceed it, every two
// neighbours merge into one of their joint window (their activity and link loads averaged by
// cycles) and from then on each frame spans twice as many observer calls (stride), so the whole
// run stays, more coarsely as it grows. Written by the simulation thread (add, finish), read by
// any thread; readers get shared_ptrs to immutable frames and never touch the fabric.
class RecordedFrames {
public:
    // `width` x `height` PEs recorded, at (originX, originY) of a `fabricWidth` x `fabricHeight`
    // wafer (the run's fabric is the plan's usable rectangle).
    RecordedFrames(int width, int height, int originX, int originY, int fabricWidth, int fabricHeight,
        std::size_t capacity, double clockHz);

    // Frames a budget of `budgetBytes` holds at `pes` PEs per frame: at least 16, at most 4096.
    static std::size_t capacityFor(std::int64_t pes, std::uint64_t budgetBytes);
    static constexpr std::uint64_t kDefaultBudgetBytes = 256ull << 20;

    void add(std::shared_ptr<const CompactFrame> frame);
    void finish(); // the run ended (or failed, or was cancelled): no more frames
    bool finished() const;
    std::size_t size() const; // frames held
    // Times the frames were merged in pairs: frame i before a halving is frame i / 2 after it.
    std::uint64_t halvings() const;
    std::uint64_t stride() const; // observer calls per frame: 2^halvings
    std::shared_ptr<const CompactFrame> at(std::size_t index) const; // null past the end
    std::shared_ptr<const CompactFrame> newest() const;

    int width() const { return m_width; }
    int height() const { return m_height; }
    int originX() const { return m_originX; }
    int originY() const { return m_originY; }
    int fabricWidth() const { return m_fabricWidth; }
    int fabricHeight() const { return m_fabricHeight; }
    std::size_t capacity() const { return m_capacity; }
    double clockHz() const { return m_clockHz; }

private:
    const int m_width;
    const int m_height;
    const int m_originX;
    const int m_originY;
    const int m_fabricWidth;
    const int m_fabricHeight;
    const std::size_t m_capacity;
    const double m_clockHz;
    mutable std::mutex m_mutex; // guards the members below
    std::deque<std::shared_ptr<const CompactFrame>> m_frames;
    std::uint64_t m_halvings = 0;
    bool m_finished = false;
};

// Measures frames of a running fabric into RecordedFrames: record() on the simulation thread,
// between steps, makes a frame of the counters' change since the previous call.
class FrameRecorder {
public:
    explicit FrameRecorder(std::shared_ptr<RecordedFrames> frames);
    // A frame of the window since the previous frame, at every stride()-th call; the first call
    // of a fabric only sets the baseline of its counters.
    void record(const Fabric& fabric, const std::string& phase, std::int64_t position, std::uint64_t tokenCycle);

private:
    std::shared_ptr<RecordedFrames> m_frames;
    const Fabric* m_fabric = nullptr; // whose counters the baselines below are
    std::uint64_t m_lastCycle = 0;
    std::vector<std::uint64_t> m_lastBusy; // router busy cycles per PE
    std::vector<std::uint64_t> m_lastEngineBusy; // engine busy cycles per PE
    std::vector<std::uint32_t> m_lastLinks;
    std::uint64_t m_calls = 0; // since the last frame
};

} // namespace waferscope::core::fabric
