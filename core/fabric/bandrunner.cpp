// Running a mesh on several threads. Each cycle's rows are split into one band per requested
// thread; bands of a cycle are independent (BandStepper) and may run on any thread in any order,
// and any split gives the state of the serial run bit for bit.
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
//
// run() knows its cycles in advance and has no caller to hand a consistent state to between
// two of them, so for a mesh that allows it, it drops the per-cycle barrier altogether
// (runSkewed): bands wait only for the edge rows of their neighbours.
#include "core/fabric/bandrunner.h"

#include "core/fabric/fabricsimd.h"

#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#if WAFERSCOPE_FABRIC_PAUSE
#include <immintrin.h>
#define WAFERSCOPE_PAUSE() _mm_pause()
#else
#define WAFERSCOPE_PAUSE() std::this_thread::yield()
#endif

namespace waferscope::core::fabric {

struct BandRunner::Arena {
    explicit Arena(int threads)
        : arena(threads)
        , concurrency(threads)
    {
    }
    tbb::task_arena arena;
    int concurrency;
    tbb::affinity_partitioner affinity; // keeps a band on the thread that ran it last cycle
};

namespace {

// Moves the boundary between two neighbouring bands by as many whole rows as their time
// difference covers, judged by their own cost per row (never emptying a band). Band b covers
// rows [split[b], split[b + 1]) and took spent(b).
template <typename Spent>
void rebalanceSplit(std::vector<int>& split, const Spent& spent)
{
    for (std::size_t b = 0; b + 2 < split.size(); ++b) {
        const double left = double(spent(int(b)).count());
        const double right = double(spent(int(b) + 1).count());
        const int leftRows = split[b + 1] - split[b];
        const int rightRows = split[b + 2] - split[b + 1];
        const double step = left / leftRows + right / rightRows; // what moving one row changes
        const int rows = step > 0.0 ? int((left - right) / step) : 0;
        split[b + 1] -= std::clamp(rows, -(rightRows - 1), leftRows - 1);
    }
}

// Splits the rows so that each band holds an equal share of their weights (at least a row
// each): the work of a token on a wafer sits in a few strips of rows, which timing alone moves
// towards only by halves.
void splitByWeight(std::vector<int>& split, const std::vector<double>& weights)
{
    const int bands = int(split.size()) - 1;
    const int rows = int(weights.size());
    double total = 0.0;
    for (const double weight : weights)
        total += weight;
    double sum = 0.0;
    int row = 0;
    for (int band = 1; band < bands; ++band) {
        const double target = total * band / bands;
        const int least = split[std::size_t(band) - 1] + 1; // the band before keeps a row
        const int most = rows - (bands - band); // and each band after one
        while (row < most && (row < least || sum + weights[std::size_t(row)] / 2.0 <= target))
            sum += weights[std::size_t(row++)];
        split[std::size_t(band)] = row;
    }
}

// Both runners rebalance the split every this many cycles, and the caller, waiting for helpers,
// steps what they have left after this many pauses (a helper without a thread, or far behind).
constexpr std::uint64_t kRebalanceEvery = 64;
constexpr int kClaimLeftoversAfter = 2048;

} // namespace

BandRunner::BandRunner(int rows)
    : m_rows(rows)
{
}

BandRunner::~BandRunner() = default;

std::vector<int>& BandRunner::bandSplit(int bands)
{
    if (m_bandSplit.size() != std::size_t(bands) + 1) {
        m_bandSplit.resize(std::size_t(bands) + 1);
        for (int band = 0; band <= bands; ++band)
            m_bandSplit[std::size_t(band)] = band * m_rows / bands;
    }
    return m_bandSplit;
}

void BandRunner::setThreads(int threads)
{
    m_threads = std::max(1, threads);
    m_arena.reset();
    if (m_threads > 1)
        m_arena = std::make_unique<Arena>(std::min(m_threads, tbb::info::default_concurrency()));
}

void BandRunner::stepInArena(BandStepper& mesh)
{
    const int bands = std::min(m_threads, m_rows);
    const auto rows = [&](int begin, int end) { return RowRange { begin, end, begin, end, m_cycle, m_current }; };
    if (bands == 1) {
        mesh.stepRows(rows(0, m_rows));
    } else {
        tbb::parallel_for(
            tbb::blocked_range<int>(0, bands, 1),
            [&](const tbb::blocked_range<int>& range) {
                for (int band = range.begin(); band < range.end(); ++band)
                    mesh.stepRows(rows(band * m_rows / bands, (band + 1) * m_rows / bands));
            },
            m_arena->affinity);
    }
    finishCycle();
}

void BandRunner::finishCycle()
{
    m_current ^= 1;
    ++m_cycle;
}

void BandRunner::step(BandStepper& mesh)
{
    if (m_arena)
        m_arena->arena.execute([&] { stepInArena(mesh); });
    else
        stepInArena(mesh);
}

void BandRunner::run(BandStepper& mesh, std::uint64_t cycles, bool skewed)
{
    cycles = std::max<std::uint64_t>(cycles, 1);
    constexpr std::uint64_t kMostParts = std::uint64_t(1) << 62; // two parts a cycle, counted in 64 bits
    if (skewed && m_arena && m_arena->concurrency > 1 && std::min(m_threads, m_rows) > 1 && cycles < kMostParts) {
        runSkewed(mesh, cycles);
        return;
    }
    runWhile(mesh, [&] { return --cycles > 0; });
}

// A row's step of cycle t reads the cycle-t state of its own row and of the rows next to it, and
// writes its own row's state for t + 1 and free queue slots of those rows (BandStepper). So a
// row may step cycle t + 1 as soon as the rows next to it have stepped cycle t, whatever the
// rest of the mesh is doing; and it must, since the buffer its step t + 1 writes is the one
// they read in cycle t. Bands thus need each other only at their edge rows, and no barrier per
// cycle: a band steps a cycle in two parts, its rows but the last, then its last row. The first
// part waits for the last row of the band above (its cycle before), the second for the first
// row of the band below. Rows go top to bottom, so the band below usually has its first row
// done before the band above reaches its last: a band waits only while the band above has not
// finished the cycle before, and neighbouring bands drift up to a cycle apart instead of
// meeting every cycle. Any order of rows the rule allows gives the serial state bit for bit:
// rows of a cycle are independent, as with runWhile().
//
// The run is cut into segments of kRebalanceEvery cycles; between two, when every band has
// caught up, the split is rebalanced as in runWhile().
void BandRunner::runSkewed(BandStepper& mesh, std::uint64_t cycles)
{
    const int bands = std::min(m_threads, m_rows);
    const int participants = std::min(m_arena->concurrency, bands);
    struct alignas(64) RowSteps {
        std::atomic<std::uint64_t> steps { 0 }; // cycles of this run the row has stepped
    };
    struct alignas(64) Band {
        std::atomic<std::uint64_t> claimed { 0 }; // parts started: two a cycle
        std::atomic<std::uint64_t> finished { 0 }; // and finished
        std::chrono::steady_clock::duration spent {};
    };
    // Each on its own line: written by one band, read by its neighbour.
    const std::unique_ptr<RowSteps[]> firstRow(new RowSteps[std::size_t(bands)]);
    const std::unique_ptr<RowSteps[]> lastRow(new RowSteps[std::size_t(bands)]);
    const std::unique_ptr<Band[]> state(new Band[std::size_t(bands)]);
    alignas(64) std::atomic<std::uint64_t> limit { 0 }; // parts of this run that may be started
    alignas(64) std::atomic<bool> stop { false };
    std::vector<int>& split = bandSplit(bands);
    const std::uint64_t firstCycle = m_cycle;
    const int firstCurrent = m_current;

    // Starts and steps the band's next part if it may; false if not.
    const auto tryPart = [&](int band, std::uint64_t below) {
        Band& own = state[std::size_t(band)];
        const std::uint64_t part = own.finished.load(std::memory_order_acquire);
        if (part >= below)
            return false;
        const std::uint64_t step = part / 2;
        const bool last = part % 2 == 1;
        if (!last && band > 0 && lastRow[std::size_t(band - 1)].steps.load(std::memory_order_acquire) < step)
            return false;
        if (last && band + 1 < bands && firstRow[std::size_t(band + 1)].steps.load(std::memory_order_acquire) < step)
            return false;
        std::uint64_t expected = part;
        if (!own.claimed.compare_exchange_strong(expected, part + 1, std::memory_order_acq_rel))
            return false; // another thread has it
        // Timed one cycle in four: a clock read costs tens of nanoseconds, a part a few microseconds.
        const bool timed = step % 4 == 0;
        const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point {};
        const int top = split[std::size_t(band)];
        const int end = split[std::size_t(band) + 1];
        RowRange rows { top, end, top, end, firstCycle + step, firstCurrent ^ int(step & 1) };
        const auto announce = [&](const std::unique_ptr<RowSteps[]>& row) {
            row[std::size_t(band)].steps.store(step + 1, std::memory_order_release);
        };
        if (last) { // a band of one row steps it here, as both its first and its last
            rows.begin = end - 1;
            rows.end = end;
            mesh.stepRows(rows);
            announce(lastRow);
            if (end - top == 1)
                announce(firstRow);
        } else if (end - top > 1) {
            rows.end = end - 1;
            mesh.stepRows(rows);
            announce(firstRow); // long before the band above needs it: it gets there a part later
        }
        if (timed)
            own.spent += std::chrono::steady_clock::now() - start;
        own.finished.store(part + 1, std::memory_order_release);
        return true;
    };
    const auto stepOwnBands = [&](int participant, std::uint64_t below) {
        bool stepped = false;
        for (int band = participant; band < bands; band += participants)
            stepped |= tryPart(band, below);
        return stepped;
    };
    const auto caughtUp = [&](std::uint64_t below) {
        for (int band = 0; band < bands; ++band)
            if (state[std::size_t(band)].finished.load(std::memory_order_acquire) < below)
                return false;
        return true;
    };
    const auto helper = [&](int participant) {
        int idle = 0;
        while (!stop.load(std::memory_order_acquire)) {
            if (stepOwnBands(participant, limit.load(std::memory_order_acquire)))
                idle = 0;
            else if (++idle < 4096)
                WAFERSCOPE_PAUSE();
            else
                std::this_thread::yield(); // the caller is between segments
        }
    };
    m_arena->arena.execute([&] {
        tbb::task_group helpers;
        for (int i = 1; i < participants; ++i)
            helpers.run([&helper, i] { helper(i); });
        for (std::uint64_t done = 0; done < cycles;) {
            const std::uint64_t below = 2 * std::min(cycles, done + kRebalanceEvery);
            limit.store(below, std::memory_order_release);
            for (int spins = 0;;) {
                if (stepOwnBands(0, below))
                    continue;
                if (caughtUp(below))
                    break;
                if (++spins % kClaimLeftoversAfter == 0) {
                    for (bool stepped = true; stepped;) {
                        stepped = false;
                        for (int band = 0; band < bands; ++band)
                            stepped |= tryPart(band, below);
                    }
                }
                WAFERSCOPE_PAUSE();
            }
            done = below / 2;
            rebalanceSplit(split, [&](int band) { return state[std::size_t(band)].spent; });
            for (int band = 0; band < bands; ++band)
                state[std::size_t(band)].spent = {};
        }
        stop.store(true, std::memory_order_release);
        helpers.wait();
    });
    m_current = firstCurrent ^ int(cycles & 1);
    m_cycle = firstCycle + cycles;
}

void BandRunner::runWhile(BandStepper& mesh, const std::function<bool()>& continueAfterStep)
{
    const int bands = std::min(m_threads, m_rows);
    if (bands == 1 || !m_arena || m_arena->concurrency == 1) {
        do
            step(mesh);
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
    // The caller changes the split only between cycles, and opening the next epoch publishes it.
    std::vector<int>& split = bandSplit(bands);
    struct alignas(64) BandTime {
        std::chrono::steady_clock::duration spent {};
    };
    const std::unique_ptr<BandTime[]> times(new BandTime[std::size_t(bands)]);
    const auto claim = [&](int band, std::uint64_t epoch) {
        std::uint64_t expected = epoch - 1;
        if (!tags[std::size_t(band)].epoch.compare_exchange_strong(expected, epoch, std::memory_order_acq_rel))
            return false;
        const auto start = std::chrono::steady_clock::now();
        const int top = split[std::size_t(band)];
        const int end = split[std::size_t(band) + 1];
        mesh.stepRows(RowRange { top, end, top, end, m_cycle, m_current });
        times[std::size_t(band)].spent += std::chrono::steady_clock::now() - start;
        done.fetch_add(1, std::memory_order_acq_rel);
        return true;
    };
    std::vector<double> weights(std::size_t(m_rows), 0.0);
    const auto rebalance = [&] {
        if (mesh.rowWeights(m_current, weights))
            splitByWeight(split, weights);
        else
            rebalanceSplit(split, [&](int band) { return times[std::size_t(band)].spent; });
        for (int band = 0; band < bands; ++band)
            times[std::size_t(band)].spent = {};
    };
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
