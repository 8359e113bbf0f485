#include "core/cluster/scheduler.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

namespace waferscope::core {

namespace {
constexpr EnumName<cluster::Policy> kPolicies[]
    = { { cluster::Policy::Fifo, "fifo" }, { cluster::Policy::Backfill, "backfill" } };
static_assert(inDeclarationOrder(kPolicies) && namesUnique(kPolicies));
} // namespace

template <>
std::span<const EnumName<cluster::Policy>> nameTable<cluster::Policy>()
{
    return kPolicies;
}

} // namespace waferscope::core

namespace waferscope::core::cluster {

namespace {

struct Running {
    double endS = 0.0;
    std::size_t job = 0;
};

// The pool of systems and MemoryX, with which jobs hold what.
class Pool {
public:
    Pool(int systems, double memoryxBytes)
        : m_memoryx(memoryxBytes)
        , m_capacity(memoryxBytes)
    {
        for (int s = 0; s < systems; ++s)
            m_free.insert(s);
    }

    int freeSystems() const { return int(m_free.size()); }
    double freeMemoryX() const { return m_memoryx; }
    bool fits(const QueuedJob& job) const
    {
        return job.systems <= freeSystems() && job.memoryxBytes <= m_memoryx * (1.0 + 1e-12);
    }
    std::vector<int> take(const QueuedJob& job)
    {
        std::vector<int> taken(m_free.begin(), std::next(m_free.begin(), job.systems));
        for (int s : taken)
            m_free.erase(s);
        m_memoryx -= job.memoryxBytes;
        return taken;
    }
    void give(const QueuedJob& job, const std::vector<int>& systems)
    {
        m_free.insert(systems.begin(), systems.end());
        m_memoryx += job.memoryxBytes;
    }
    // Nothing runs: all of MemoryX is free, exactly (sums of takes and gives may round).
    void reset() { m_memoryx = m_capacity; }

private:
    std::set<int> m_free; // lowest first, so a job gets the lowest free indices
    double m_memoryx;
    double m_capacity;
};

} // namespace

const char* toString(Policy policy)
{
    return nameOf(policy);
}

std::vector<std::optional<Placement>> scheduleJobs(
    const std::vector<QueuedJob>& jobs, int systems, double memoryxBytes, Policy policy)
{
    std::vector<std::optional<Placement>> placed(jobs.size());
    // Arrivals in submit order; the queue in priority, submit and file order.
    std::vector<std::size_t> arrivals;
    for (std::size_t j = 0; j < jobs.size(); ++j)
        if (jobs[j].systems <= systems && jobs[j].systems > 0 && jobs[j].memoryxBytes <= memoryxBytes)
            arrivals.push_back(j);
    std::stable_sort(arrivals.begin(), arrivals.end(),
        [&](std::size_t a, std::size_t b) { return jobs[a].submitS < jobs[b].submitS; });
    const auto before = [&](std::size_t a, std::size_t b) {
        if (jobs[a].priority != jobs[b].priority)
            return jobs[a].priority > jobs[b].priority;
        if (jobs[a].submitS != jobs[b].submitS)
            return jobs[a].submitS < jobs[b].submitS;
        return a < b;
    };
    std::set<std::size_t, decltype(before)> queue(before);
    std::vector<Running> running; // kept sorted by end time
    Pool pool(systems, memoryxBytes);
    std::size_t next = 0;
    double now = 0.0;

    const auto start = [&](std::size_t j) {
        Placement placement { now, now + jobs[j].durationS, pool.take(jobs[j]) };
        const Running entry { placement.endS, j };
        running.insert(std::upper_bound(running.begin(), running.end(), entry,
                           [](const Running& a, const Running& b) { return a.endS < b.endS; }),
            entry);
        placed[j] = std::move(placement);
        queue.erase(j);
    };
    // When the head could start, were the running jobs to end as planned, and what is then
    // spare beyond its needs.
    struct Shadow {
        double timeS = std::numeric_limits<double>::infinity();
        int spareSystems = 0;
        double spareMemoryX = 0.0;
    };
    const auto shadowOf = [&](const QueuedJob& head) {
        int freeSystems = pool.freeSystems();
        double freeMemoryX = pool.freeMemoryX();
        for (const Running& r : running) {
            freeSystems += jobs[r.job].systems;
            freeMemoryX += jobs[r.job].memoryxBytes;
            if (head.systems <= freeSystems && head.memoryxBytes <= freeMemoryX * (1.0 + 1e-12))
                return Shadow { r.endS, freeSystems - head.systems, std::max(0.0, freeMemoryX - head.memoryxBytes) };
        }
        return Shadow {};
    };

    while (next < arrivals.size() || !queue.empty() || !running.empty()) {
        // The next event: an arrival or a job's end, whichever is first.
        double at = std::numeric_limits<double>::infinity();
        if (next < arrivals.size())
            at = jobs[arrivals[next]].submitS;
        if (!running.empty())
            at = std::min(at, running.front().endS);
        if (!(at < std::numeric_limits<double>::infinity()))
            break; // waiting jobs with nothing left to free: cannot happen for jobs that fit alone
        now = std::max(now, at);
        while (!running.empty() && running.front().endS <= now) {
            const std::size_t j = running.front().job;
            pool.give(jobs[j], placed[j]->systems);
            running.erase(running.begin());
        }
        if (running.empty())
            pool.reset();
        while (next < arrivals.size() && jobs[arrivals[next]].submitS <= now)
            queue.insert(arrivals[next++]);
        // In order while the head fits.
        while (!queue.empty() && pool.fits(jobs[*queue.begin()]))
            start(*queue.begin());
        if (policy != Policy::Backfill || queue.empty())
            continue;
        const std::size_t head = *queue.begin();
        Shadow shadow = shadowOf(jobs[head]);
        // Every job needs a system: once none is free, no later job can start now.
        for (auto it = std::next(queue.begin()); it != queue.end() && pool.freeSystems() > 0;) {
            const std::size_t j = *it++;
            const QueuedJob& job = jobs[j];
            if (!pool.fits(job))
                continue;
            const bool endsInTime = now + job.durationS <= shadow.timeS;
            const bool spare = job.systems <= shadow.spareSystems && job.memoryxBytes <= shadow.spareMemoryX;
            if (!endsInTime && !spare)
                continue;
            if (!endsInTime) {
                shadow.spareSystems -= job.systems;
                shadow.spareMemoryX = std::max(0.0, shadow.spareMemoryX - job.memoryxBytes);
            }
            start(j);
        }
    }
    return placed;
}

} // namespace waferscope::core::cluster
