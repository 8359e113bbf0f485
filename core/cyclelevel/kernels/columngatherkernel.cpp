// The column all-gather of weight streaming: after an op whose outputs lie in bands over the PE
// rows (the streamed GEMM's), every PE of a column gets all of its tokens' values, the next op's
// resident operand.
//
// Layout: PE (c, r) holds band r of its T tokens' M values, dims x tokens (FP32), at its place in
// a buffer of bands 0..r (`down`). Two sweeps run along each column at once, each on two
// alternating colors:
//   down: row 0 sends its band south; each row below stores what comes from the north into
//         `down` (bands 0..r-1, in order) and passes it on south as it stores it (a Store task
//         with a forward, a cycle a wavelet), then sends its own band south after it;
//   up:   the same from the last row northwards, into `up`: bands, ..., r+1, in the
//         order they come.
// A row sends its band down once its down store is done, and up once both are; the last row
// keeps what comes down, the first what comes up. No value is changed on the way.
#include "core/cyclelevel/kernels/columngatherkernel.h"

#include "core/kernels/streamgemm.h"

#include <stdexcept>

namespace waferscope::core::cyclelevel {

using namespace fabric;

ColumnGatherKernel::ColumnGatherKernel(ColumnGatherSpec spec, const KernelContext& context)
    : m_spec(std::move(spec))
    , m_context(context)
{
    const auto refuse = [&](const std::string& why) { throw std::logic_error(m_spec.name + ": " + why); };
    if (m_spec.frame.w < 1 || m_spec.frame.h < 1 || m_spec.frame.westward)
        refuse("needs an eastward region of at least one PE");
    if (m_spec.tokensPerPe < 1 || m_spec.dims < 1)
        refuse("needs tokens and values to gather");
    const std::size_t expected = std::size_t(columns()) * std::size_t(m_spec.tokensPerPe) * std::size_t(m_spec.dims);
    if (m_spec.values.size() != expected)
        refuse(std::to_string(m_spec.values.size()) + " values; " + std::to_string(columns() * m_spec.tokensPerPe)
            + " tokens x " + std::to_string(m_spec.dims) + " expected");
    if (!m_spec.bands.empty()) {
        bool ascending = m_spec.bands.size() == std::size_t(rows()) + 1 && m_spec.bands.front() == 0
            && m_spec.bands.back() == std::uint32_t(m_spec.dims);
        for (std::size_t r = 1; ascending && r < m_spec.bands.size(); ++r)
            ascending = m_spec.bands[r] >= m_spec.bands[r - 1];
        if (!ascending)
            refuse("its bands are not " + std::to_string(rows() + 1) + " ascending bounds from 0 to "
                + std::to_string(m_spec.dims));
    }
}

void ColumnGatherKernel::route(RouteBook& book)
{
    if (rows() < 2)
        return;
    StreamTree down[2] { StreamTree(m_spec.name + " down"), StreamTree(m_spec.name + " down") };
    StreamTree up[2] { StreamTree(m_spec.name + " up"), StreamTree(m_spec.name + " up") };
    for (int c = 0; c < columns(); ++c) {
        const int x = m_spec.frame.x(c);
        for (int r = 0; r + 1 < rows(); ++r) { // only the links that carry something
            if (bandBegin(r + 1) > 0) {
                down[r % 2].hop(x, m_spec.frame.y(r), Fabric::kRampPort, directionBit(South));
                down[r % 2].hop(x, m_spec.frame.y(r + 1), North, kRampBit);
            }
            if (bandBegin(r + 1) < m_spec.dims) {
                up[(r + 1) % 2].hop(x, m_spec.frame.y(r + 1), Fabric::kRampPort, directionBit(North));
                up[(r + 1) % 2].hop(x, m_spec.frame.y(r), South, kRampBit);
            }
        }
    }
    for (int parity = 0; parity < 2; ++parity) {
        if (!down[parity].empty())
            m_down[parity] = book.place(down[parity]);
        if (!up[parity].empty())
            m_up[parity] = book.place(up[parity]);
    }
}

void ColumnGatherKernel::load(StaticColorFabric& fabric)
{
    const auto T = std::uint32_t(m_spec.tokensPerPe);
    const auto m = std::uint32_t(m_spec.dims);
    m_buffers.clear();
    m_outputs.clear();
    for (int r = 0; r < rows(); ++r) {
        for (int c = 0; c < columns(); ++c) {
            const Pe at { m_spec.frame.x(c), m_spec.frame.y(r) };
            PeState& pe = fabric.pe(at.x, at.y);
            Buffers own;
            own.down = pe.allocF32(std::max<std::size_t>(1, std::size_t(bandBegin(r + 1)) * T));
            own.up = pe.allocF32(std::max<std::size_t>(1, std::size_t(m - bandBegin(r + 1)) * T));
            for (std::uint32_t o = 0; o < bandSize(r); ++o)
                for (std::uint32_t t = 0; t < T; ++t)
                    pe.f32[own.down + (bandBegin(r) + o) * T + t]
                        = m_spec.values[(std::size_t(c) * T + t) * m + bandBegin(r) + o];
            m_buffers.push_back(own);
            const std::uint32_t first = std::uint32_t(c) * T;
            if (bandBegin(r + 1) > 0)
                m_outputs.push_back({ at, own.down, first, T, 0, bandBegin(r + 1), true });
            std::uint32_t next = own.up;
            for (int band = rows() - 1; band > r; --band) {
                if (bandSize(band) == 0)
                    continue;
                m_outputs.push_back({ at, next, first, T, bandBegin(band), bandSize(band), true });
                next += bandSize(band) * T;
            }
        }
    }
}

void ColumnGatherKernel::program(ProgramWriter& writer, int) const
{
    const auto T = std::uint32_t(m_spec.tokensPerPe);
    const auto m = std::uint32_t(m_spec.dims);
    for (int r = 0; r < rows(); ++r) {
        const std::uint32_t above = bandBegin(r) * T; // what comes down to it
        const std::uint32_t below = (m - bandBegin(r + 1)) * T; // ... and up
        const std::uint32_t own = bandSize(r) * T;
        const bool last = r + 1 == rows();
        for (int c = 0; c < columns(); ++c) {
            const Buffers& buffers = m_buffers[std::size_t(r) * std::size_t(columns()) + std::size_t(c)];
            const int x = m_spec.frame.x(c);
            const int y = m_spec.frame.y(r);
            if (above > 0)
                writer.arm(x, y, m_down[(r + 1) % 2], storeTask(buffers.down, above, last ? kNoColor : m_down[r % 2]));
            if (below > 0)
                writer.arm(x, y, m_up[(r + 1) % 2], storeTask(buffers.up, below, r == 0 ? kNoColor : m_up[r % 2]));
            if (above > 0)
                writer.await(x, y, m_down[(r + 1) % 2]);
            if (!last && own > 0) {
                writer.send(x, y, m_down[r % 2], buffers.down + bandBegin(r) * T, own);
                writer.awaitSend(x, y);
            }
            if (below > 0)
                writer.await(x, y, m_up[(r + 1) % 2]);
            if (r > 0 && own > 0) {
                writer.send(x, y, m_up[r % 2], buffers.down + bandBegin(r) * T, own);
                writer.awaitSend(x, y);
            }
        }
    }
}

KernelCost ColumnGatherKernel::closedForm() const
{
    ColumnGatherShape shape;
    shape.columns = columns();
    shape.tokensPerPe = m_spec.tokensPerPe;
    for (int r = 0; r < rows(); ++r)
        shape.bands.push_back(bandSize(r));
    return costColumnGather(shape);
}

} // namespace waferscope::core::cyclelevel
