#pragma once

#include "core/report/cyclelevelreport.h"
#include "core/report/reportdocument.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::report {

// The "Cycle level vs model" sections of a report that carries a cycle-level run. A decoder
// repeats one block of regions per layer, so the region table shows the regions outside the
// blocks, every region of the first and of the last block, and one row for the blocks between;
// the kernel table sums every region by kernel. report.json and cycle_vs_model.csv keep all.

// The block a region belongs to: its op name up to the first numeric component
// ("layers.3.attn.core" -> "layers.3"); empty for a region outside the blocks ("lm_head").
std::string blockOfRegion(const std::string& op);

// One row of the region table: a region, or the blocks between the first and the last summed.
struct CycleRegionRow {
    std::size_t firstRegion = 0; // index into CycleLevelReport::regions
    std::size_t regionCount = 1; // regions summed in this row (1 for a single region)
    std::string firstBlock; // a row of blocks: the first and last of them, and how many
    std::string lastBlock;
    int blocks = 0; // 0 for a single region
};

std::vector<CycleRegionRow> cycleRegionRows(const CycleLevelReport& report);

// Every region of one block summed, in the order of the blocks; regions outside blocks left out.
struct BlockCycles {
    std::string block;
    int regions = 0;
    double measuredCycles = 0.0;
    double modelCycles = 0.0;
};

std::vector<BlockCycles> cyclesByBlock(const CycleLevelReport& report);

// Every region of one kernel summed.
struct KernelCycles {
    std::string kernel;
    int regions = 0;
    double measuredCycles = 0.0;
    double modelCycles = 0.0;
    double linkWavelets = 0.0;
    double busyPeCycles = 0.0; // sum of busy_fraction x pes x measured_cycles
    double peCycles = 0.0; // sum of pes x measured_cycles
};

// Ordered by measured cycles, most first.
std::vector<KernelCycles> cyclesByKernel(const CycleLevelReport& report);

// "Cycle level vs model" (measured against the model-level engine's figures of `report`),
// "... by kernel", "... by region" and "Cycle-level run"; none without a cycle-level run.
std::vector<ReportSection> cycleLevelSections(const RunReport& report);

} // namespace waferscope::core::report
