#include "core/kernels/experts.h"

#include "core/kernels/closedform.h"

#include <algorithm>
#include <cstdlib>

namespace waferscope::core {

using namespace closedform;

namespace {

// An experts region's pieces: expert e's up, (gate,) down on consecutive column ranges.
struct ExpertsGeometry {
    explicit ExpertsGeometry(const DecodeExpertsShape& experts)
        : shape(experts)
        , simd(std::max(1, experts.simdWidth))
        , count(std::max(1, experts.experts))
        , parts(experts.gatedFfn ? 3 : 2)
        , pieces(count * parts)
    {
        for (const DecodeLane& lane : shape.hidden) {
            widest = std::max(widest, lane.size);
            hiddenTotal += lane.size;
        }
        round = elementwise(widest, 1, simd);
    }
    int begin(int piece) const { return int(std::int64_t(shape.width) * piece / pieces); }
    double exitColumn(int e) const { return double(begin((e + 1) * parts) - 1); }
    bool isChosen(int e) const { return std::find(shape.chosen.begin(), shape.chosen.end(), e) != shape.chosen.end(); }
    // Piece `index` as a dispatched GEMV from `in` to `out`.
    DecodeGemvShape piece(int index, const std::vector<DecodeLane>& in, const std::vector<DecodeLane>& out) const
    {
        constexpr double kRoutedAt = 2.0; // the router's Send step to its first wavelet at column 0
        DecodeGemvShape gemv;
        gemv.width = begin(index + 1) - begin(index);
        gemv.height = shape.height;
        gemv.inputs = in;
        gemv.outputs = out;
        gemv.simdWidth = simd;
        gemv.experts = count;
        gemv.treeReduced = shape.treeReduced;
        if (shape.routed)
            gemv.routedAt = kRoutedAt + double(begin(index));
        return gemv;
    }

    const DecodeExpertsShape& shape;
    int simd;
    int count; // experts
    int parts; // projections an expert
    int pieces;
    std::int64_t widest = 0;
    std::int64_t hiddenTotal = 0;
    double round = 0.0; // a hidden lane's rounding step
};

double latest(const std::vector<double>& times)
{
    return *std::max_element(times.begin(), times.end());
}

// Expert e's weighted output ready to join the sum at its down's exit, chosen or not.
double expertDone(const ExpertsGeometry& geometry, int e, bool chosen)
{
    const DecodeExpertsShape& shape = geometry.shape;
    const int parts = geometry.parts;
    const int simd = geometry.simd;
    DecodeGemvShape up = geometry.piece(e * parts, shape.hidden, shape.ffn);
    up.inputsStored = true;
    up.chosen = chosen;
    up.epilogue = shape.gatedFfn ? Epilogue::Round : Epilogue::Activation;
    // Unrouted, the input lanes stream in and reach a piece as they pass the ones before it.
    const auto reach = [&](int index) { return shape.routed ? 0.0 : double(geometry.begin(index)); };
    const GemvGeometry upGeometry(up);
    std::vector<double> inner = gemvSumsIn(upGeometry);
    for (std::size_t k = 0; k < inner.size(); ++k)
        inner[k] += reach(e * parts) + upGeometry.epilogueCycles(shape.ffn[k].size);
    if (shape.gatedFfn) {
        // The gate rounds its sums, then takes up's lane (its side input) and applies the
        // activation to one and multiplies by the other.
        DecodeGemvShape gate = geometry.piece(e * parts + 1, shape.hidden, shape.ffn);
        gate.inputsStored = true;
        gate.chosen = chosen;
        const std::vector<double> sums = gemvSumsIn(GemvGeometry(gate));
        const double apart = double(geometry.begin(e * parts + 2) - geometry.begin(e * parts + 1));
        for (std::size_t k = 0; k < inner.size(); ++k) {
            const std::int64_t size = shape.ffn[k].size;
            const double sideIn = inner[k] + 1.0 + apart + double(size);
            inner[k] = std::max(reach(e * parts + 1) + sums[k] + elementwise(size, 1, simd), sideIn)
                + elementwise(size, 8, simd);
        }
    }
    // The inner lanes leave the exits west of the down piece as the last is ready.
    const double sent = latest(inner);
    DecodeGemvShape down = geometry.piece(e * parts + parts - 1, shape.ffn, shape.hidden);
    down.chosen = chosen;
    if (down.routedAt)
        *down.routedAt -= sent;
    const std::vector<double> sums = gemvSumsIn(GemvGeometry(down));
    return sent + latest(sums) + 2.0 * geometry.round; // the bias and rounding, the scaling by its weight
}

// The sum from exit to exit (a wavelet a cycle behind the first, each exit adding as it forwards),
// then the last exit's rounding and residual: a max-plus chain, so the token's cycles are the
// largest over experts of its ready cycle plus the chain's tail after it. Given the chosen experts,
// exact; else the expectation over a uniform set of topK.
double expertsCycles(const ExpertsGeometry& geometry)
{
    const DecodeExpertsShape& shape = geometry.shape;
    const int experts = geometry.count;
    std::vector<double> tail(std::size_t(experts), 0.0);
    for (int e = experts - 2; e >= 0; --e)
        tail[std::size_t(e)] = tail[std::size_t(e + 1)] + 1.0 + (geometry.exitColumn(e + 1) - geometry.exitColumn(e));
    const double finish = double(geometry.widest) + 2.0 * geometry.round; // the adds, rounding and the residual
    std::vector<double> ifChosen; // each expert's path to the end, chosen or not
    std::vector<double> ifIdle;
    for (int e = 0; e < experts; ++e) {
        ifChosen.push_back(expertDone(geometry, e, true) + tail[std::size_t(e)] + finish);
        ifIdle.push_back(expertDone(geometry, e, false) + tail[std::size_t(e)] + finish);
    }
    const double idle = latest(ifIdle);
    const int k = std::clamp(shape.topK, 1, experts);
    double cycles = 0.0;
    if (!shape.chosen.empty()) { // exact: the chosen's and the others' max-plus paths
        for (int e = 0; e < experts; ++e)
            cycles = std::max(cycles, geometry.isChosen(e) ? ifChosen[std::size_t(e)] : ifIdle[std::size_t(e)]);
        return cycles;
    }
    // The i-th smallest is the largest chosen with probability C(i, k - 1) / C(E, k) (i from 0).
    std::sort(ifChosen.begin(), ifChosen.end());
    double probability = 0.0; // C(i, k - 1) / C(E, k), updated as i grows
    for (int i = k - 1; i < experts; ++i) {
        if (i == k - 1) {
            probability = 1.0;
            for (int j = 0; j < k; ++j)
                probability *= double(k - j) / double(experts - j);
        } else {
            probability *= double(i) / double(i - k + 1);
        }
        cycles += probability * std::max(ifChosen[std::size_t(i)], idle);
    }
    return cycles;
}

struct ExpertsLoad {
    double busy = 0.0;
    double busiestPe = 0.0;
    double links = 0.0;
    double busiestLink = 0.0;
};

// Engine cycles: each piece as a dispatched GEMV, its FMACs by the chance its expert is chosen;
// the gate's side stores and activation; the downs' scaling and the chain's adds; the last exit's
// rounding, residual and its side stores. Links: each piece's GEMV traffic, the input lanes' runs
// across the region, the routing weights, up's lanes to the gates, the running sum, the residual.
ExpertsLoad expertsLoad(const ExpertsGeometry& geometry)
{
    const DecodeExpertsShape& shape = geometry.shape;
    const int parts = geometry.parts;
    const int experts = geometry.count;
    const double chosenShare
        = shape.routed ? double(std::clamp(shape.topK, 1, experts)) / double(experts) : 1.0;
    ExpertsLoad load;
    std::vector<int> farthestTap(shape.hidden.size(), 0); // region column of each input lane's last tap
    for (int p = 0; p < geometry.pieces; ++p) {
        const bool isDown = p % parts == parts - 1;
        DecodeGemvShape gemv
            = isDown ? geometry.piece(p, shape.ffn, shape.hidden) : geometry.piece(p, shape.hidden, shape.ffn);
        gemv.epilogue = isDown || (shape.gatedFfn && p % parts == 0) ? Epilogue::Round
            : shape.gatedFfn                                         ? Epilogue::Gated
                                                                     : Epilogue::Activation;
        const double share = shape.chosen.empty() ? chosenShare : geometry.isChosen(p / parts) ? 1.0 : 0.0;
        for (const bool chosen : { true, false }) {
            gemv.chosen = chosen;
            const Work work = gemvWork(GemvGeometry(gemv));
            load.busy += (chosen ? share : 1.0 - share) * work.busy;
            load.busiestPe = std::max(load.busiestPe, work.busiestPe);
        }
        gemv.epilogue = Epilogue::Round; // the gate's side input is up's lane, counted below
        const GemvGeometry pieceGeometry(gemv);
        const Traffic traffic = gemvTraffic(pieceGeometry);
        load.links += traffic.links;
        load.busiestLink = std::max(load.busiestLink, traffic.busiestLink);
        // The input lanes' runs: the hidden lanes cross the region from column 0 once, to the
        // last piece that takes them; an inner lane crosses from the exit before the piece.
        for (std::size_t lane = 0; lane < gemv.inputs.size(); ++lane) {
            const double size = double(gemv.inputs[lane].size);
            const int tap = pieceGeometry.lastTap(int(lane));
            load.links -= size * double(tap);
            if (isDown)
                load.links += size * double(tap + 1);
            else
                farthestTap[lane] = std::max(farthestTap[lane], geometry.begin(p) + tap);
        }
        if (isDown) // the scaling, and the add of the running sum at every exit but the first
            for (const DecodeLane& out : shape.hidden)
                load.busy += elementwise(out.size, 1, geometry.simd) + (p >= parts ? double(out.size) : 0.0);
    }
    for (std::size_t lane = 0; lane < shape.hidden.size(); ++lane)
        load.links += double(shape.hidden[lane].size) * double(farthestTap[lane]);
    std::int64_t lowest = 0; // the routing weights go down every column to its lowest worker
    for (const DecodeLane& lane : shape.hidden)
        lowest = std::max<std::int64_t>(lowest, lane.row);
    for (const DecodeLane& lane : shape.ffn)
        lowest = std::max<std::int64_t>(lowest, lane.row);
    load.links += double(experts) * (double(shape.width - 1) + double(shape.width) * double(lowest));
    const auto hiddenTotal = double(geometry.hiddenTotal);
    for (int e = 0; e < experts; ++e) {
        if (shape.gatedFfn) // up's lanes to the gate's exits
            for (const DecodeLane& lane : shape.ffn)
                load.links
                    += double(lane.size) * double(geometry.begin(e * parts + 2) - geometry.begin(e * parts + 1));
        if (e > 0)
            load.links += hiddenTotal * (geometry.exitColumn(e) - geometry.exitColumn(e - 1));
    }
    load.links += hiddenTotal * double(shape.width - 1); // the residual to the last exit
    load.busy += hiddenTotal + 2.0 * hiddenTotal / double(geometry.simd); // its stores, rounding, add
    return load;
}

} // namespace

KernelCost costDecodeExperts(const DecodeExpertsShape& shape)
{
    const ExpertsGeometry geometry(shape);
    if (shape.width < geometry.pieces || shape.hidden.empty() || shape.ffn.empty())
        return {};
    const double cycles = expertsCycles(geometry);
    const ExpertsLoad load = expertsLoad(geometry);
    const double pes = double(shape.width) * double(shape.height);
    KernelCost cost = decodeCost(cycles, load.busy, pes, load.busiestPe, load.busiestLink, load.links);
    const int k = std::clamp(shape.topK, 1, geometry.count);
    for (const DecodeLane& out : shape.ffn)
        for (const DecodeLane& in : shape.hidden)
            cost.fmacs += double(geometry.parts) * double(in.size) * double(out.size) * double(k);
    return cost;
}

} // namespace waferscope::core
