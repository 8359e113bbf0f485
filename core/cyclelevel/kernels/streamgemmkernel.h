#pragma once

#include "core/cyclelevel/kernels/prefillkernel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace waferscope::core::cyclelevel {

// A weight-streaming GEMM over resident activations (training's weight streaming): R x C PEs, PE
// column c holding tokens [c T, (c + 1) T) of the resident operand, every row of PEs the whole of
// it; PE row r accumulates its band of the outputs for its tokens while that band's weights
// stream in from the west edge, multicast along the row. Its scheme is described at the top of
// streamgemmkernel.cpp.
//   Forward (Pass::Forward): Y = W X, X the resident tokens x N, Y's rows W's rows (M).
//   Backward delta (Pass::BackwardDelta): dX = W^T dY, dY the resident tokens x M, W streamed
//   again by its columns (N outputs).
//   With `splitInner`, the rows split the inner dimension instead of the outputs: PE row r holds
//   band r of the inner values of its tokens only and computes every output's partial sum over
//   its band (a ColumnReduceKernel adds the rows' partials): the delta of an op whose dY is too
//   wide to hold whole, the LM head's over the vocabulary.
struct StreamGemmSpec {
    std::string name;
    Frame frame; // R rows x C columns: the frame's w columns and h rows
    Pass pass = Pass::Forward;
    WeightTensor weight = WeightTensor::absent(Storage::Fp16); // M x N: the forward's outputs x inputs
    int tokensPerPe = 8; // T
    // The resident operand, (C T) tokens x inner, row-major, already rounded to storage (X: inner
    // N; dY: inner M). Loaded as 16-bit into every PE of its tokens' column.
    std::vector<float> resident;
    bool splitInner = false;
    // Which weights stream: where `keep` (laid out as `weight`) is not zero, when it is present;
    // otherwise the non-zero weights. A training step streams its mask's weights, zeros among
    // them (a bias that starts at 0 is streamed all the same).
    WeightTensor keep = WeightTensor::absent(Storage::Fp16);
};

// What every weight-streaming kernel refuses (std::logic_error naming the kernel): an empty or
// westward frame, no weight matrix, no tokens a PE.
void checkStreamLayout(const std::string& kernel, const Frame& frame, const WeightTensor& weight, int tokensPerPe);

class StreamGemmKernel final : public PrefillKernel {
public:
    // Refuses (std::logic_error, naming the kernel) an empty frame, no weight, a gradient pass
    // (not this kernel's), a resident operand of another size, and an inner dimension a wavelet's
    // 16-bit index cannot name.
    StreamGemmKernel(StreamGemmSpec spec, const KernelContext& context);
    const std::string& name() const override { return m_spec.name; }
    Pass pass() const override { return m_spec.pass; }
    std::vector<WeightTensor> streamed() const override { return { m_spec.weight }; }

    // The weights' streams: one lane per PE row with outputs, elements [begin, end) of feed(); every
    // PE of the row (taps()) takes the whole lane. A wavelet is a non-zero weight (16-bit, the high
    // half) and its index along the inner dimension (the low half), or a row marker after each output.
    const Lanes& lanes() const { return m_lanes; }
    std::vector<Pe> taps(std::size_t lane) const;
    std::vector<float> feed() const; // each wavelet's bits as a float

    // It moves nothing on a block's rings.
    void needRings(PrefillRings&) const override { }
    void useRings(const PrefillRings&) override { }
    void load(fabric::StaticColorFabric& fabric) override;
    // The streams come on `inputColor`.
    void program(ProgramWriter& writer, int inputColor) const override;
    // After a run: each PE's outputs for its tokens, dims x tokens (dimsMajor).
    const std::vector<PrefillOutputTile>& outputTiles() const override { return m_outputs; }
    KernelCost closedForm() const override;
    // At the edge's pace (StaticColorFabric::EdgeRate): the first wavelet at `start`, then at
    // most `wavelets` every `cycles` cycles.
    KernelCost closedForm(std::uint64_t start, std::uint32_t wavelets, std::uint32_t cycles) const;

    std::int64_t outputs() const; // M forward, N delta
    std::int64_t inner() const; // N forward, M delta

private:
    int rows() const { return m_spec.frame.h; }
    int columns() const { return m_spec.frame.w; }
    // Row r's outputs [bandBegin, bandBegin + bandSize) and inner indices [innerBegin, innerEnd).
    std::uint32_t bandBegin(int r) const { return m_spec.splitInner ? 0 : blockBegin(outputs(), rows(), r); }
    std::uint32_t bandSize(int r) const
    {
        if (m_spec.splitInner)
            return innerEnd(r) > innerBegin(r) ? std::uint32_t(outputs()) : 0;
        return blockBegin(outputs(), rows(), r + 1) - blockBegin(outputs(), rows(), r);
    }
    std::uint32_t innerBegin(int r) const { return m_spec.splitInner ? blockBegin(inner(), rows(), r) : 0; }
    std::uint32_t innerEnd(int r) const
    {
        return m_spec.splitInner ? blockBegin(inner(), rows(), r + 1) : std::uint32_t(inner());
    }
    float weightOf(std::int64_t output, std::int64_t k) const; // W's element for output `output`, inner index k
    bool streams(std::int64_t output, std::int64_t k) const; // whether that weight is in the stream
    // Row r's stream, appended to `out`; returns its non-zero weights.
    std::int64_t appendStream(int r, std::vector<float>* out) const;

    StreamGemmSpec m_spec;
    KernelContext m_context;
    Lanes m_lanes;
    std::vector<std::uint32_t> m_activations; // per (r, c): f16 offset
    std::vector<PrefillOutputTile> m_outputs;
};

} // namespace waferscope::core::cyclelevel
