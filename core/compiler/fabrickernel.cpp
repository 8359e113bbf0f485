// No header of its own: defines fabricKernelFor, declared in compiler.h with the compiler it serves.
// The bridge from a placed region to the cycle-level fabric: the kernel that executes its plan.
#include "core/compiler/compiler.h"

#include <algorithm>
#include <cmath>

namespace waferscope::core {

Expected<fabric::KernelConfig> fabricKernelFor(const Region& region, const ModelGraph& graph, const SystemSpec& system)
{
    const auto refuse = [&](const std::string& why) {
        return Diagnostic { "<region " + region.opName + ">", 0, 0, why, Diagnostic::Kind::CannotMap };
    };
    if (region.kernel.kind != KernelPlan::Kind::Gemv || region.op < 0 || std::size_t(region.op) >= graph.ops.size())
        return refuse(std::string("a ") + toString(region.kernel.kind)
            + " region has no cycle-level kernel yet (GEMV regions of pipelined and inference plans have)");
    const Op& op = graph.ops[std::size_t(region.op)];
    if (op.kind == Op::Kind::Experts)
        return refuse("mixture-of-experts regions have no cycle-level kernel yet");
    fabric::KernelConfig config;
    config.kind = fabric::KernelKind::Gemv;
    // The plan's rows: the op's outputs and those of matrices fused in on its input (k and v in
    // a stacked plan's q region).
    const std::int64_t rows = std::max<std::int64_t>(op.outFeatures, region.kernel.matrixRows);
    config.matrixRows = int(rows);
    config.matrixCols = int(op.inFeatures);
    // The plan may turn the kernel a quarter (x multicast along rows, y reduced down columns):
    // the same kernel on the transposed rectangle. A side longer than the matrix leaves PEs idle,
    // as the plan's cycle count assumes.
    const bool turned = region.kernel.broadcast == fabric::East;
    config.regionRows = int(std::min<std::int64_t>(turned ? region.rect.w : region.rect.h, rows));
    config.regionCols = int(std::min<std::int64_t>(turned ? region.rect.h : region.rect.w, op.inFeatures));
    config.simdWidth = system.wafer.fmacPerPePerCycle;
    config.sramPerPeBytes = system.wafer.sramPerPeBytes;
    return config;
}

double fmacBoundCycles(const KernelPlan& kernel, int simdWidth)
{
    const double lanes = std::max(1, simdWidth);
    return double(kernel.tileCols) * std::ceil(double(kernel.tileRows) / lanes);
}

} // namespace waferscope::core
