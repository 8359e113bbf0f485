#pragma once

// Private to the region kernels (normcolumn.cpp, gemvkernel.cpp, attentionkernel.cpp, embeddingkernel.cpp)
// and the prefill kernels (prefill*kernel.cpp).
#include "core/cyclelevel/kernels/prefillgrid.h"
#include "core/cyclelevel/kernels/regionkernel.h"
#include "core/fabric/half.h"

#include <cstdlib>
#include <vector>

namespace waferscope::core::cyclelevel::detail {

using namespace fabric;

inline std::uint16_t encode(float value, const KernelContext& context)
{
    return context.storage == Storage::Bf16 ? floatToBfloat16(value) : floatToHalf(value);
}

// A chain along `pes` in order: PE p > 0 receives on chain[(p - 1) % 2] from p - 1, PE p sends on
// chain[p % 2] to p + 1. Adds the hops of both colors to `trees`.
inline void chainHops(const std::vector<Pe>& pes, StreamTree trees[2])
{
    for (std::size_t p = 0; p + 1 < pes.size(); ++p) {
        const Pe from = pes[p];
        const Pe to = pes[p + 1];
        const int direction = to.x > from.x ? East : to.x < from.x ? West : to.y > from.y ? South : North;
        trees[p % 2].hop(from.x, from.y, Fabric::kRampPort, directionBit(direction));
        trees[p % 2].hop(to.x, to.y, opposite(direction), kRampBit);
    }
}

// A straight path from `from` to `to` (same row or column), delivered only at `to`.
inline void straightPath(StreamTree& tree, Pe from, Pe to)
{
    const int direction = to.x > from.x ? East : to.x < from.x ? West : to.y > from.y ? South : North;
    const int length = std::abs(to.x - from.x) + std::abs(to.y - from.y) + 1;
    std::vector<bool> deliver(std::size_t(length), false);
    deliver.back() = true;
    tree.run(from.x, from.y, direction, length, Fabric::kRampPort, deliver);
}

// The ring shifts of a prefill kernel's `blocks` g x g blocks (PrefillGrid): each ring edge k (from
// position k + 1 to k) of every row, then of every column, on one color if some step carries a
// tile over it. rowUsed(from, other): whether column `from` of row `other` sends along the row at
// some step; columnUsed(other, from): whether row `from` of column `other` sends up the column;
// at(block, x, y): the PE. Fills rowShift and columnShift per edge (-1: unused).
template <typename RowUsed, typename ColumnUsed, typename At>
void placeRingShifts(RouteBook& book, const std::string& name, const PrefillGrid& grid, int blocks,
    const RowUsed& rowUsed, const ColumnUsed& columnUsed, const At& at, std::vector<int>& rowShift,
    std::vector<int>& columnShift)
{
    const int g = grid.size();
    rowShift.assign(std::size_t(g), -1);
    columnShift.assign(std::size_t(g), -1);
    for (int k = 0; k < g; ++k) {
        StreamTree rows(name + " row shift");
        StreamTree columns(name + " column shift");
        const int from = grid.ringMember(k + 1);
        const int to = grid.ringMember(k);
        for (int block = 0; block < blocks; ++block)
            for (int other = 0; other < g; ++other) {
                if (rowUsed(from, other))
                    straightPath(rows, at(block, from, other), at(block, to, other));
                if (columnUsed(other, from))
                    straightPath(columns, at(block, other, from), at(block, other, to));
            }
        if (!rows.empty())
            rowShift[std::size_t(k)] = book.place(rows);
        if (!columns.empty())
            columnShift[std::size_t(k)] = book.place(columns);
    }
}

// Takes a lane of `laneSize` wavelets whole and stores `size` of them, from the `skip`th, at `offset`.
inline DataTask keepTask(std::uint32_t offset, std::uint32_t laneSize, std::uint32_t skip, std::uint32_t size)
{
    DataTask task = storeTask(offset, laneSize);
    task.skip = skip;
    task.use = size;
    return task;
}

} // namespace waferscope::core::cyclelevel::detail
