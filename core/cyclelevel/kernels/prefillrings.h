#pragma once

#include "core/cyclelevel/kernels/prefillgrid.h"
#include "core/cyclelevel/kernels/routebook.h"
#include "core/kernels/geometry.h"

#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// The ring shifts of one g x g block of PEs (PrefillGrid's interleaved rings), routed once for
// every prefill kernel that runs on the block, one after another: a tile only ever moves along a
// ring edge (ring position k + 1 to k) of a physical row or column, so kernels that take turns on
// the block can share one color per edge and direction instead of each routing its own (a few
// GEMMs' own rings would exhaust a router's 24 colors).
//
// Use: each kernel says which edges it uses (needRow, needColumn), place() routes their union, and
// each kernel then takes the colors (rowColor, columnColor).
class PrefillRings {
public:
    PrefillRings(std::string name, const Frame& frame, int grid);
    int size() const { return m_grid.size(); }
    const PrefillGrid& grid() const { return m_grid; }

    // Block column `from` of block row `row` sends along the row at some step; block row `from`
    // of block column `column` sends up the column at some step (block coordinates: the frame's
    // first g columns and rows).
    void needRow(int from, int row);
    void needColumn(int column, int from);
    // Routes every needed edge: one color per edge a row needs, one per edge a column needs.
    void place(RouteBook& book);

    // The color of ring edge k (ring position k + 1 to k) along the rows, or up the columns; -1
    // where no kernel needs it.
    int rowColor(int edge) const { return m_row[std::size_t(edge)]; }
    int columnColor(int edge) const { return m_column[std::size_t(edge)]; }
    const std::vector<int>& rowColors() const { return m_row; }
    const std::vector<int>& columnColors() const { return m_column; }

private:
    std::string m_name;
    Frame m_frame;
    PrefillGrid m_grid;
    std::vector<char> m_rowNeeded; // per (row, from column)
    std::vector<char> m_columnNeeded; // per (column, from row)
    std::vector<int> m_row;
    std::vector<int> m_column;
};

} // namespace waferscope::core::cyclelevel
