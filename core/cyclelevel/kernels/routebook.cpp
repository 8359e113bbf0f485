#include "core/cyclelevel/kernels/routebook.h"

#include <algorithm>
#include <bit>

namespace waferscope::core::cyclelevel {

using namespace fabric;

void StreamTree::hop(int x, int y, int rx, std::uint8_t tx)
{
    const std::int64_t key = (std::int64_t(y) << 32) | std::uint32_t(x);
    for (std::size_t i = m_hops.size(); i-- > 0;) { // recent hops first: paths are built in order
        if (m_keys[i] != key)
            continue;
        if (m_hops[i].rx != rx)
            throw std::logic_error(
                "stream " + m_name + " enters (" + std::to_string(x) + ", " + std::to_string(y) + ") from two sides");
        m_hops[i].tx |= tx;
        return;
    }
    m_hops.push_back({ x, y, rx, tx });
    m_keys.push_back(key);
}

void StreamTree::run(int x, int y, int along, int length, int rx, const std::vector<bool>& deliver)
{
    static constexpr int dx[] = { 0, 0, 1, -1 };
    static constexpr int dy[] = { -1, 1, 0, 0 };
    for (int i = 0; i < length; ++i) {
        std::uint8_t tx = i + 1 < length ? directionBit(along) : 0;
        if (std::size_t(i) < deliver.size() && deliver[std::size_t(i)])
            tx |= kRampBit;
        hop(x, y, i == 0 ? rx : opposite(along), tx);
        x += dx[along];
        y += dy[along];
    }
}

RouteBook::RouteBook(StaticColorFabric& fabric)
    : m_fabric(fabric)
    , m_used(std::size_t(fabric.peCount()), 0)
{
}

int RouteBook::place(const std::vector<const StreamTree*>& trees)
{
    const int colors = m_fabric.config().colors;
    std::uint32_t busy = 0;
    for (const StreamTree* tree : trees) {
        for (const Hop& hop : tree->hops()) {
            if (hop.tx == 0 || hop.x < 0 || hop.y < 0 || hop.x >= m_fabric.width() || hop.y >= m_fabric.height())
                throw std::logic_error("stream " + tree->name() + " has a dead end or leaves the fabric at ("
                    + std::to_string(hop.x) + ", " + std::to_string(hop.y) + ")");
            busy |= m_used[std::size_t(std::int64_t(hop.y) * m_fabric.width() + hop.x)];
        }
    }
    const std::uint32_t free = ~busy & ((1u << colors) - 1u);
    if (free == 0) {
        std::string names;
        for (const StreamTree* tree : trees)
            names += (names.empty() ? "" : ", ") + tree->name();
        throw RouteError("no color is free along " + names + ": its routers already carry all " + std::to_string(colors)
            + " colors");
    }
    const int color = std::countr_zero(free);
    for (const StreamTree* tree : trees) {
        for (const Hop& hop : tree->hops()) {
            m_fabric.setRoute(hop.x, hop.y, color, hop.rx, hop.tx);
            m_used[std::size_t(std::int64_t(hop.y) * m_fabric.width() + hop.x)] |= 1u << color;
        }
    }
    m_everUsed |= 1u << color;
    return color;
}

int RouteBook::maxColorsAtARouter() const
{
    int most = 0;
    for (const std::uint32_t bits : m_used)
        most = std::max(most, std::popcount(bits));
    return most;
}

int RouteBook::colorsInUse() const
{
    return std::popcount(m_everUsed);
}

} // namespace waferscope::core::cyclelevel
