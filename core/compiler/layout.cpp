// No header of its own: defines the strip layout of units.h (layoutStrips), split from units.cpp.
// Serpentine strip layout of pipeline stages inside a rectangle of PEs.
#include "core/compiler/units.h"

#include <algorithm>
#include <limits>

namespace waferscope::core::compiler {

namespace {

struct Stage {
    std::size_t first = 0;
    std::size_t last = 0; // one past
    int rows = 0;
};

// The smallest n in [low, high] for which `holds` (monotone: once true, true for every larger
// n); high + 1 when it does not hold even at high.
template <typename Predicate>
int fewest(int low, int high, Predicate holds)
{
    if (low > high)
        return high + 1;
    if (holds(low)) // often already enough (sized by memory): one evaluation
        return low;
    if (!holds(high))
        return high + 1;
    // Invariant: !holds(low), holds(high).
    while (high - low > 1) {
        const int middle = low + (high - low) / 2;
        (holds(middle) ? high : low) = middle;
    }
    return high;
}

struct Sizer {
    const std::vector<Unit>& units;
    const ModelGraph& graph;
    const SystemSpec& system;
    std::int64_t capacity;
    bool training;
    int width;

    double cycles(const Unit& unit, int rows, int columns) const
    {
        if (unit.work <= 0.0)
            return 0.0;
        Region region;
        region.rect = { 0, 0, columns, rows };
        planKernel(region, unit, graph, system, training);
        return region.computeCycles;
    }
    // Fewest columns (at `rows` rows) that hold the unit's bytes and run it within `target`
    // cycles; width + 1 when no width does (cycles never grow with more columns).
    int columns(const Unit& unit, int rows, double target) const
    {
        const int low = int(std::min<std::int64_t>(width + 1, ceilDiv(memoryPes(unit, capacity), rows)));
        return fewest(low, width, [&](int n) { return cycles(unit, rows, n) <= target; });
    }
    // Fewest rows (at most `rows`) at which `columns` columns still hold the unit's bytes and
    // meet `target`: a region that would finish early on the full strip height gives rows back.
    int shrinkRows(const Unit& unit, int rows, int columns, double target) const
    {
        const std::int64_t low = std::max<std::int64_t>(1, ceilDiv(memoryPes(unit, capacity), columns));
        return std::min(rows, fewest(int(std::min<std::int64_t>(rows, low)), rows, [&](int n) {
            return cycles(unit, n, columns) <= target;
        }));
    }
    std::int64_t stageColumns(const Stage& stage, int rows, double target) const
    {
        std::int64_t total = 0;
        for (std::size_t u = stage.first; u < stage.last && total <= width; ++u)
            total += columns(units[u], rows, target);
        return total;
    }
    // Fewest rows at which the stage's ops fit side by side within `target`; 0 if none.
    int stageRows(const Stage& stage, int height, double target) const
    {
        const int rows = fewest(1, height, [&](int n) { return stageColumns(stage, n, target) <= width; });
        return rows > height ? 0 : rows;
    }
};

// Inference: the decode kernels carry a vector along a strip as one lane per row, and a matrix
// op's region turns each lane down a column of its own, after a column for a fused norm. So
// every matrix region gets at least rows + 1 columns (or as many as the strip leaves beside the
// regions its bytes make wider: fewer lanes), taken from the widest regions (never below what
// their bytes need). A region alone in its strip gets the whole strip.
void widenForLanes(const std::vector<Unit>& units, std::size_t first, int rows, int bandWidth,
    std::int64_t capacityPerPe, const ModelGraph& graph, std::vector<int>& width)
{
    const std::size_t count = width.size();
    if (count == 1) { // alone in its strip (the embedding, the LM head): the whole strip
        width[0] = std::max(width[0], bandWidth);
        return;
    }
    std::vector<int> memory(count);
    std::vector<bool> matrix(count);
    for (std::size_t i = 0; i < count; ++i) {
        const Unit& unit = units[first + i];
        memory[i] = int(std::min<std::int64_t>(bandWidth, ceilDiv(memoryPes(unit, capacityPerPe), rows)));
        matrix[i] = isMatrixOp(graph.ops[std::size_t(unit.op)].kind);
    }
    // rows + 1 columns for each matrix region, or as many as the strip has room for beside what
    // the regions' bytes need (a region that needs more than its share keeps it: fewer lanes).
    std::vector<int> floor(count);
    const auto needed = [&](int lanes) {
        std::int64_t total = 0;
        for (std::size_t i = 0; i < count; ++i)
            total += matrix[i] ? std::max(memory[i], lanes) : std::max(memory[i], 1);
        return total;
    };
    int lanes = rows + 1;
    while (lanes > 1 && needed(lanes) > bandWidth)
        --lanes;
    if (needed(lanes) > bandWidth)
        return;
    for (std::size_t i = 0; i < count; ++i)
        floor[i] = matrix[i] ? std::max(memory[i], lanes) : std::max(memory[i], 1);
    for (std::size_t i = 0; i < count; ++i) {
        while (width[i] < floor[i]) {
            std::size_t donor = count;
            for (std::size_t j = 0; j < count; ++j)
                if (width[j] > floor[j] && (donor == count || width[j] > width[donor]))
                    donor = j;
            std::int64_t total = 0;
            for (const int w : width)
                total += w;
            if (total < bandWidth) { // spare columns in the strip first
                ++width[i];
                continue;
            }
            if (donor == count)
                return;
            --width[donor];
            ++width[i];
        }
    }
}

} // namespace

std::string layoutStrips(const std::vector<Unit>& units, std::size_t first, std::size_t last, const Rect& band,
    std::int64_t capacityPerPe, const ModelGraph& graph, const SystemSpec& system, bool training, int wafer,
    int replica, std::vector<Region>& regions, bool fillHeight)
{
    std::vector<Stage> stages;
    for (std::size_t u = first; u < last; ++u) {
        if (stages.empty() || units[u].stage != units[stages.back().first].stage)
            stages.push_back({ u, u, 0 });
        stages.back().last = u + 1;
    }
    const Sizer sizer { units, graph, system, capacityPerPe, training, band.w };
    // The smallest bottleneck (compute cycles of the slowest region) at which every stage fits
    // its strip and the strips fit the band; each op then gets the fewest PEs that meet it.
    const auto rowsAt = [&](double target, std::vector<int>* rows) {
        std::int64_t total = 0;
        for (std::size_t s = 0; s < stages.size(); ++s) {
            const int need = sizer.stageRows(stages[s], band.h, target);
            if (need == 0)
                return std::int64_t(band.h) + 1;
            total += need;
            if (rows)
                (*rows)[s] = need;
        }
        return total;
    };
    double slowest = 0.0;
    for (std::size_t u = first; u < last; ++u)
        slowest = std::max(slowest, sizer.cycles(units[u], 1, 1));
    double high = std::max(slowest, 1.0);
    if (rowsAt(high, nullptr) > band.h)
        return std::to_string(stages.size()) + " pipeline stages do not fit " + std::to_string(band.w) + " x "
            + std::to_string(band.h) + " PEs with the SRAM their ops need";
    double low = 0.0;
    for (int iteration = 0; iteration < 48 && high - low > 1e-3 * high; ++iteration) {
        const double middle = 0.5 * (low + high);
        (rowsAt(middle, nullptr) <= band.h ? high : low) = middle;
    }
    // Cycle counts are steps (tiles are whole wavelets and SIMD-wide instructions), so a region
    // one step below the bottleneck may finish a quarter early. Regions are sized for a
    // bottleneck kBalanceSlack above the smallest feasible one: that costs at most that much
    // throughput and lets such a region take the step up on fewer PEs.
    constexpr double kBalanceSlack = 0.01;
    const double target = high * (1.0 + kBalanceSlack);
    std::vector<int> rows(stages.size());
    rowsAt(target, &rows);
    for (std::size_t s = 0; s < stages.size(); ++s)
        stages[s].rows = fillHeight && stages.size() == 1 ? band.h : rows[s];

    int y = band.y;
    for (std::size_t s = 0; s < stages.size(); ++s) {
        const Stage& stage = stages[s];
        const std::size_t count = stage.last - stage.first;
        std::vector<int> width(count);
        std::vector<int> height(count);
        for (std::size_t i = 0; i < count; ++i) {
            width[i] = sizer.columns(units[stage.first + i], stage.rows, target);
            height[i] = training ? sizer.shrinkRows(units[stage.first + i], stage.rows, width[i], target) : stage.rows;
        }
        const std::vector<int> sized = width;
        if (!training)
            widenForLanes(units, stage.first, stage.rows, band.w, capacityPerPe, graph, width);
        // Serpentine: even strips run west to east, odd ones east to west.
        int x = s % 2 == 0 ? band.x : band.x + band.w;
        for (std::size_t i = 0; i < count; ++i) {
            const Unit& unit = units[stage.first + i];
            Region region;
            region.op = unit.op;
            region.fused = unit.fused;
            region.opName = graph.ops[std::size_t(unit.op)].name;
            region.role = graph.ops[std::size_t(unit.op)].role;
            region.layer = graph.ops[std::size_t(unit.op)].layer;
            region.stage = unit.stage;
            region.system = wafer;
            region.replica = replica;
            if (s % 2 == 0) {
                region.rect = { x, y, width[i], height[i] };
                x += width[i];
            } else {
                x -= width[i];
                region.rect = { x, y, width[i], height[i] };
            }
            region.weightBytes = unit.weightBytes;
            region.stateBytes = unit.stateBytes;
            region.activationBytes = unit.activationBytes;
            region.kvCacheBytes = unit.kvCacheBytes;
            region.sramBytesPerPe = ceilDiv(unit.bytes(), region.rect.area());
            region.widenedForLanes = width[i] > sized[i];
            region.sizedByMemory = unit.work <= 0.0
                || (width[i] == int(ceilDiv(memoryPes(unit, capacityPerPe), height[i]))
                    && sizer.cycles(unit, height[i], width[i]) < 0.8 * target);
            planKernel(region, unit, graph, system, training);
            regions.push_back(std::move(region));
        }
        y += stage.rows;
    }
    return {};
}

} // namespace waferscope::core::compiler
