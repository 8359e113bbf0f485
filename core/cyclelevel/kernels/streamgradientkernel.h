#pragma once

#include "core/cyclelevel/kernels/prefillkernel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// The weight gradient of a weight-streaming GEMM, dW = dY X^T (Pass::BackwardGradient), on the
// layout of StreamGemmKernel: R x C PEs, PE column c holding tokens [c T, (c + 1) T) of X (all N
// inputs) and of dY (its row's band of the M outputs), 16-bit. Each PE sums its tokens' share of
// every weight of its band that the mask keeps (a sparse W: its non-zeros only); the shares are
// added along each row from east to west, and the row's first PE sends the band's gradient, in the
// order the weights stream, off the wafer through the west edge, where the weights came in, at
// the I/O's pace. Its scheme is described at the top of streamgradientkernel.cpp.
struct StreamGradientSpec {
    std::string name;
    Frame frame; // R rows x C columns
    // M x N: the weights whose gradient it computes; only where they are zero matters (those have
    // no gradient, as a sparse W streams none).
    WeightTensor weight = WeightTensor::absent(Storage::Fp16);
    int tokensPerPe = 8; // T
    // The resident operands, (C T) tokens row-major, rounded to storage: X (tokens x N), the
    // forward's input, and dY (tokens x M), the delta of its output.
    std::vector<float> input;
    std::vector<float> delta;
    // The pace the I/O takes the gradients off the wafer at (its start ignored: the I/O's latency
    // comes after they leave); the default is the link's.
    fabric::StaticColorFabric::EdgeRate exit;
    // At most this many of a row's kept weights at a time (0: all at once): each PE computes a
    // chunk's shares, the row adds them and sends them off the wafer, then the next chunk, so that
    // a PE holds a chunk's shares, not its band's (the LM head's band over 769 inputs would not
    // fit its SRAM).
    std::uint32_t chunk = 0;
};

class StreamGradientKernel final : public PrefillKernel {
public:
    // Refuses (std::logic_error, naming the kernel) an empty frame, no weight, no tokens, operands of
    // other sizes, and a band whose kept weights or whose indices a PE's 16-bit words cannot hold.
    StreamGradientKernel(StreamGradientSpec spec, const KernelContext& context);
    const std::string& name() const override { return m_spec.name; }
    Pass pass() const override { return Pass::BackwardGradient; }
    // The shares move along the rows on two colors of its own, and leave on a third, not on a
    // block's rings.
    void needRings(PrefillRings&) const override { }
    void useRings(const PrefillRings&) override { }
    void route(RouteBook& book);
    // Also puts an edge sink on each row's west boundary link (StaticColorFabric::addEdgeSink).
    void load(fabric::StaticColorFabric& fabric) override;
    void program(ProgramWriter& writer, int inputColor) const override;
    // None: the gradients leave the wafer (exited()).
    const std::vector<PrefillOutputTile>& outputTiles() const override { return m_outputs; }
    // After a run: per PE row, the gradients that left through its west edge, the kept weights'
    // in the order the weights stream (output by output, inputs ascending).
    std::vector<std::vector<float>> exited(const fabric::StaticColorFabric& fabric) const;
    KernelCost closedForm() const override;

    // The kept weights of PE row r: (output, input) pairs in stream order.
    std::vector<std::pair<std::int64_t, std::int64_t>> kept(int r) const;

private:
    int rows() const { return m_spec.frame.h; }
    int columns() const { return m_spec.frame.w; }
    std::int64_t outputs() const { return m_spec.weight.rows(); }
    std::int64_t inputs() const { return m_spec.weight.cols(); }
    std::uint32_t bandBegin(int r) const { return blockBegin(outputs(), rows(), r); }
    std::uint32_t bandSize(int r) const { return bandBegin(r + 1) - bandBegin(r); }

    std::uint32_t chunkSize() const { return m_spec.chunk > 0 ? m_spec.chunk : 0xffffffffu; }
    std::uint32_t chunkCount(int r) const
    {
        const auto kept = std::uint64_t(m_kept[std::size_t(r)]);
        return std::uint32_t((kept + chunkSize() - 1) / chunkSize());
    }
    std::uint32_t chunkPairs(int r, std::uint32_t k) const
    {
        const auto kept = std::uint64_t(m_kept[std::size_t(r)]);
        return std::uint32_t(std::min<std::uint64_t>(chunkSize(), kept - std::uint64_t(k) * chunkSize()));
    }
    struct Buffers {
        std::uint32_t input = 0; // f16: N x T
        std::uint32_t delta = 0; // f16: band x T
        std::uint32_t pairs = 0; // f16: a sparse band's (output in band, input) pairs; none for a dense one
        std::uint32_t chunks = 0; // f32: per chunk its first pair, its pairs, dense (0 or 1), N, the pairs' offset
        std::uint32_t share = 0; // f32: a chunk's
    };
    StreamGradientSpec m_spec;
    KernelContext m_context;
    std::vector<std::int64_t> m_kept; // per row: its kept weights
    std::vector<Buffers> m_buffers; // per (r, c)
    int m_colors[2] = { -1, -1 }; // the shares' chain: PE c > 0 sends west on m_colors[c % 2]
    int m_exit = -1; // the first PE's sums, off the wafer
    std::vector<PrefillOutputTile> m_outputs;
};

} // namespace waferscope::core::cyclelevel
