// Running the fabric on several threads. Each cycle's rows are split into one band per
// requested thread; bands of a cycle are independent (fabric.cpp) and may run on any thread in
// any order, and any split gives the state of the serial run bit for bit.
//
// step() runs one cycle with a tbb::parallel_for. runWhile() runs many: a small mesh's cycle
// (tens of microseconds) is shorter than the time a TBB worker spins before it goes to sleep,
// so a parallel_for per cycle would pay a wake-up every cycle, and bands would wander between
// cores. Instead the workers stay in the run, each with its own bands: each cycle the calling
// thread opens the bands (epoch-tagged), every thread claims its own, and the caller waits for
// the last one. A helper that never gets a thread cannot block the run: a caller that has
// waited long claims whatever is left itself.
//
// Every cycle waits for the slowest band, so runWhile() also balances the split: it times each
// band and every few dozen cycles moves rows from a band that took longer than its neighbour
// to that neighbour. Cores that are not equally fast (another tenant on one of them, a hybrid
// CPU) then finish their bands together.
#include "core/fabric/fabric.h"
#include "core/fabric/fabricarena.h"

#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

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
    finishCycle();
}

void Fabric::finishCycle()
{
    m_current ^= 1;
    ++m_cycle;
    m_countsPending = m_config.routing == Routing::DimensionOrder; // the rows' byte counts grew
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
    // Band b belongs to participant b % participants (the caller is participant 0), so a band's
    // rows stay in one core's cache from cycle to cycle. A band is claimed for epoch e by moving
    // its tag from e - 1 to e; an owner claims its own bands first, then anyone takes what is
    // left, so a helper that never gets a thread only costs speed.
    struct alignas(64) Tag {
        std::atomic<std::uint64_t> epoch { 0 };
    };
    const int participants = std::min(m_arena->concurrency, bands);
    const std::unique_ptr<Tag[]> tags(new Tag[std::size_t(bands)]);
    alignas(64) std::atomic<std::uint64_t> open { 0 }; // the epoch whose bands may be claimed
    alignas(64) std::atomic<std::uint64_t> done { 0 }; // bands finished, all epochs together
    alignas(64) std::atomic<bool> stop { false };
    // Band b covers rows [split[b], split[b + 1]); the caller changes the split only between
    // cycles, and opening the next epoch publishes it.
    std::vector<int> split(std::size_t(bands) + 1);
    for (int band = 0; band <= bands; ++band)
        split[std::size_t(band)] = band * m_height / bands;
    struct alignas(64) BandTime {
        std::chrono::steady_clock::duration spent {};
    };
    const std::unique_ptr<BandTime[]> times(new BandTime[std::size_t(bands)]);
    const auto claim = [&](int band, std::uint64_t epoch) {
        std::uint64_t expected = epoch - 1;
        if (!tags[std::size_t(band)].epoch.compare_exchange_strong(expected, epoch, std::memory_order_acq_rel))
            return false;
        const auto start = std::chrono::steady_clock::now();
        stepRows(split[std::size_t(band)], split[std::size_t(band) + 1]);
        times[std::size_t(band)].spent += std::chrono::steady_clock::now() - start;
        done.fetch_add(1, std::memory_order_acq_rel);
        return true;
    };
    // Moves the boundary between two neighbouring bands by as many whole rows as their time
    // difference covers, judged by their own cost per row (never emptying a band).
    const auto rebalance = [&] {
        for (int band = 0; band + 1 < bands; ++band) {
            const auto b = std::size_t(band);
            const double left = double(times[b].spent.count());
            const double right = double(times[b + 1].spent.count());
            const int leftRows = split[b + 1] - split[b];
            const int rightRows = split[b + 2] - split[b + 1];
            const double step = left / leftRows + right / rightRows; // what moving one row changes
            const int rows = step > 0.0 ? int((left - right) / step) : 0;
            split[b + 1] -= std::clamp(rows, -(rightRows - 1), leftRows - 1);
        }
        for (int band = 0; band < bands; ++band)
            times[std::size_t(band)].spent = {};
    };
    constexpr std::uint64_t kRebalanceEvery = 64; // cycles
    const auto work = [&](int participant, std::uint64_t epoch) {
        for (int band = participant; band < bands; band += participants)
            claim(band, epoch);
    };
    // Bands whose owner has not started them yet (a plain read first: a failed exchange would
    // still pull the tag's line away from its owner).
    const auto claimLeftovers = [&](std::uint64_t epoch) {
        for (int band = 0; band < bands; ++band)
            if (tags[std::size_t(band)].epoch.load(std::memory_order_relaxed) == epoch - 1)
                claim(band, epoch);
    };
    constexpr int kClaimLeftoversAfter = 2048; // pauses of the caller waiting for the helpers
    const auto helper = [&](int participant) {
        std::uint64_t seen = 0;
        int idle = 0;
        while (!stop.load(std::memory_order_acquire)) {
            const std::uint64_t epoch = open.load(std::memory_order_acquire);
            if (epoch != seen) {
                work(participant, epoch);
                seen = epoch;
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
        for (int i = 1; i < participants; ++i)
            helpers.run([&helper, i] { helper(i); });
        bool more = true;
        for (std::uint64_t epoch = 1; more; ++epoch) {
            open.store(epoch, std::memory_order_release);
            work(0, epoch);
            for (int spins = 1; done.load(std::memory_order_acquire) < epoch * std::uint64_t(bands); ++spins) {
                if (spins % kClaimLeftoversAfter == 0)
                    claimLeftovers(epoch);
                WAFERSCOPE_PAUSE();
            }
            finishCycle();
            if (epoch % kRebalanceEvery == 0)
                rebalance();
            more = continueAfterStep();
        }
        stop.store(true, std::memory_order_release);
        helpers.wait();
    });
}

} // namespace waferscope::core::fabric
