// Running the fabric on several threads. Each cycle's rows are split into one band per
// requested thread (a fixed partition, so results do not depend on the machine); bands of a
// cycle are independent (fabric.cpp) and may run on any thread in any order.
//
// step() runs one cycle with a tbb::parallel_for. runWhile() runs many: a small mesh's cycle
// (tens of microseconds) is shorter than the time a TBB worker spins before it goes to sleep,
// so a parallel_for per cycle would pay a wake-up every cycle. Instead the workers stay in
// the run: each cycle the calling thread opens the bands (an epoch-tagged claim counter), every
// thread claims bands until none is left, and the caller waits for the last one. A helper that
// never gets a thread cannot block the run: the caller claims whatever is left itself.
#include "core/fabric/fabric.h"
#include "core/fabric/fabricarena.h"

#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_group.h>

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WAFERSCOPE_PAUSE() _mm_pause()
#else
#define WAFERSCOPE_PAUSE() std::this_thread::yield()
#endif

namespace waferscope::core::fabric {

void Fabric::setThreads(int threads)
{
    m_threads = std::max(1, threads);
    m_arena.reset();
    if (m_threads > 1)
        m_arena = std::make_unique<Arena>(std::min(m_threads, tbb::info::default_concurrency()));
}

void Fabric::stepInArena()
{
    const int bands = std::min(m_threads, m_height);
    if (bands == 1) {
        stepRows(0, m_height);
    } else {
        tbb::parallel_for(
            tbb::blocked_range<int>(0, bands, 1),
            [&](const tbb::blocked_range<int>& range) {
                for (int band = range.begin(); band < range.end(); ++band)
                    stepRows(band * m_height / bands, (band + 1) * m_height / bands);
            },
            m_arena->affinity);
    }
    m_current ^= 1;
    ++m_cycle;
}

void Fabric::step()
{
    if (m_arena)
        m_arena->arena.execute([&] { stepInArena(); });
    else
        stepInArena();
}

void Fabric::run(std::uint64_t cycles)
{
    runWhile([&] { return --cycles > 0; });
}

void Fabric::runWhile(const std::function<bool()>& continueAfterStep)
{
    const int bands = std::min(m_threads, m_height);
    if (bands == 1 || !m_arena || m_arena->concurrency == 1) {
        do
            step();
        while (continueAfterStep());
        return;
    }
    // claim: (epoch << 32) | next band to hand out. done: bands finished in this epoch.
    std::atomic<std::uint64_t> claim { 0 };
    std::atomic<int> done { 0 };
    std::atomic<bool> stop { false };
    const auto runBand = [&](std::uint64_t ticket) {
        const int band = int(ticket & 0xffffffffu);
        stepRows(band * m_height / bands, (band + 1) * m_height / bands);
        done.fetch_add(1, std::memory_order_acq_rel);
    };
    // Claims bands of the current epoch until there are none; false if none was left.
    const auto claimBands = [&] {
        bool worked = false;
        std::uint64_t ticket = claim.load(std::memory_order_acquire);
        while (int(ticket & 0xffffffffu) < bands) {
            if (claim.compare_exchange_weak(ticket, ticket + 1, std::memory_order_acq_rel)) {
                runBand(ticket);
                worked = true;
                ticket = claim.load(std::memory_order_acquire);
            }
        }
        return worked;
    };
    const auto helper = [&] {
        int idle = 0;
        while (!stop.load(std::memory_order_acquire)) {
            if (claimBands()) {
                idle = 0;
            } else if (++idle < 4096) {
                WAFERSCOPE_PAUSE();
            } else {
                std::this_thread::yield(); // the caller is busy between cycles (observer, ...)
            }
        }
    };
    m_arena->arena.execute([&] {
        tbb::task_group helpers;
        for (int i = 1; i < m_arena->concurrency; ++i)
            helpers.run(helper);
        std::uint64_t epoch = 0;
        bool more = true;
        while (more) {
            done.store(0, std::memory_order_relaxed);
            claim.store(++epoch << 32, std::memory_order_release); // opens bands 0.. of this cycle
            claimBands();
            while (done.load(std::memory_order_acquire) < bands)
                WAFERSCOPE_PAUSE();
            m_current ^= 1;
            ++m_cycle;
            // Close the epoch before anything else runs, so no helper starts a band early.
            claim.store((epoch << 32) | std::uint64_t(bands), std::memory_order_release);
            more = continueAfterStep();
        }
        stop.store(true, std::memory_order_release);
        helpers.wait();
    });
}

} // namespace waferscope::core::fabric
