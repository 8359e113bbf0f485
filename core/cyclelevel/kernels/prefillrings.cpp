#include "core/cyclelevel/kernels/prefillrings.h"

#include "core/cyclelevel/kernels/kernelsupport.h"

namespace waferscope::core::cyclelevel {

PrefillRings::PrefillRings(std::string name, const Frame& frame, int grid)
    : m_name(std::move(name))
    , m_frame(frame)
    , m_grid(grid, 1, 1)
    , m_rowNeeded(std::size_t(grid) * std::size_t(grid), 0)
    , m_columnNeeded(std::size_t(grid) * std::size_t(grid), 0)
    , m_row(std::size_t(grid), -1)
    , m_column(std::size_t(grid), -1)
{
}

void PrefillRings::needRow(int from, int row)
{
    m_rowNeeded[std::size_t(row) * std::size_t(size()) + std::size_t(from)] = 1;
}

void PrefillRings::needColumn(int column, int from)
{
    m_columnNeeded[std::size_t(column) * std::size_t(size()) + std::size_t(from)] = 1;
}

void PrefillRings::place(RouteBook& book)
{
    const auto g = std::size_t(size());
    detail::placeRingShifts(
        book, m_name, m_grid, 1,
        [&](int from, int row) { return m_rowNeeded[std::size_t(row) * g + std::size_t(from)] != 0; },
        [&](int column, int from) { return m_columnNeeded[std::size_t(column) * g + std::size_t(from)] != 0; },
        [&](int, int x, int y) {
            return Pe { m_frame.x(x), m_frame.y(y) };
        },
        m_row, m_column);
}

} // namespace waferscope::core::cyclelevel
