// `run --mode train --level cycle` of a GPT-2-style decoder (traingpt.h): its whole training
// step executed kernel by kernel on the weight-streaming layout (trainrun.h), checked against the
// reference step in plain loops (traingptreference.h).
//
// A linear layer is the streamed GEMM, an epilogue on the bands (the rounding; GELU; the
// residual add) and the column gather that makes its outputs the next op's resident operand;
// LayerNorm runs at every PE of a column on the gathered values; attention is the row attention
// (a head a PE row), gathered by heads. The embedding is the linear layer of the one-hot token
// and position, so its gradient is the gradient kernel's too.
// Backward: each linear's weight gradient streams out of the wafer, its delta streams W in again
// and is gathered; the norms' backward adds the residual stream's gradient, and their weight and
// bias gradients are the gradient kernel's over their terms; the attention's dQ and dK, dV are
// two passes, gathered by heads together.
#include "core/cyclelevel/traingptrun.h"

#include "core/cyclelevel/stepkernels.h"
#include "core/cyclelevel/traingpt.h"
#include "core/cyclelevel/traingptreference.h"
#include "core/cyclelevel/trainops.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

namespace waferscope::core::cyclelevel {

namespace {

using Clock = std::chrono::steady_clock;
using Matrix = std::vector<float>;

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Forward and backward of one step: 3 kernels for the embedding, 16 a block and 4 for the final
// norm, the head and the loss; 7 for the head's and the norm's backward, 30 a block (7 of them the
// gathers of its saved operands) and the embedding's gradient.
std::int64_t kernelsPerStep(const TrainTransformer& net)
{
    return 46 * net.blocks + 15;
}

class DecoderStep {
public:
    DecoderStep(const TrainTransformer& net, const StepLayout& layout, double lossScale, const CycleProgress& progress,
        std::int64_t kernelsBefore, std::int64_t kernelsInAll)
        : m_net(net)
        , m_layout(layout)
        , m_lossScale(lossScale)
        , m_kernels(layout, net.storage, progress, kernelsBefore, kernelsInAll)
    {
    }

    float loss = 0.0f;
    std::vector<std::vector<float>> gradients;
    std::vector<TrainKernelRecord>& records() { return m_kernels.records; }
    std::size_t peakSram() const { return m_kernels.peakSram; }

    void run(const std::vector<std::vector<float>>& weights, const std::vector<std::vector<float>>& masks,
        const TrainTokens& tokens)
    {
        m_weights = &weights;
        m_masks = &masks;
        gradients.assign(weights.size(), {});
        for (std::size_t i = 0; i < weights.size(); ++i)
            gradients[i].assign(weights[i].size(), 0.0f);
        const std::int64_t D = m_net.hidden;
        const std::int64_t V = m_net.vocab;
        // MemoryX streams the tables' rows that the step's tokens and positions use: the embedding
        // is the linear layer of the one-hot over those (in ascending order, as the full one-hot's
        // sum takes them, so the sums are the same to the bit).
        const std::int64_t width = V + m_net.sequence;
        const Matrix oneHot = embeddingInputs(m_net, tokens, m_layout.padded);
        std::vector<std::int64_t> used;
        for (std::int64_t j = 0; j < width; ++j)
            for (std::int64_t t = 0; t < m_layout.tokens; ++t)
                if (oneHot[std::size_t(t * width + j)] != 0.0f) {
                    used.push_back(j);
                    break;
                }
        const auto U = std::int64_t(used.size());
        const Matrix table = embeddingMatrix(m_net, weights);
        Matrix rows(std::size_t(D * U));
        Matrix inputs(std::size_t(m_layout.padded * U));
        for (std::int64_t u = 0; u < U; ++u) {
            for (std::int64_t i = 0; i < D; ++i)
                rows[std::size_t(i * U + u)] = table[std::size_t(i * width + used[std::size_t(u)])];
            for (std::int64_t t = 0; t < m_layout.padded; ++t)
                inputs[std::size_t(t * U + u)] = oneHot[std::size_t(t * width + used[std::size_t(u)])];
        }
        Matrix x = linear("embedding", Pass::Forward, rows, D, U, inputs, Epilogue::Round);
        m_saved.assign(std::size_t(m_net.blocks), {});
        for (std::int64_t b = 0; b < m_net.blocks; ++b)
            x = blockForward(b, x);
        m_finalIn = x;
        m_finalOut = norm(m_net.finalNorm(), "ln_f", x);
        // The logits stay on the bands: the loss reduces over them, and the head's delta sums
        // each row's band and adds the rows.
        const Matrix logits = linear("lm_head", Pass::Forward, weights[m_net.head()], V, D + 1,
            withOnes(m_layout.padded, m_finalOut, D), Epilogue::Round, nullptr, nullptr, 0, false);
        Matrix dz = softmaxLoss(logits, tokens);

        headBackward(dz);
        Matrix dx
            = normBackward(m_net.finalNorm(), "ln_f", recall("ln_f", Pass::BackwardDelta, m_finalIn, D), m_delta, {});
        for (std::int64_t b = m_net.blocks; b-- > 0;)
            dx = blockBackward(b, dx);
        const Matrix compact = m_kernels.gradient("embedding", D, U, Matrix(std::size_t(D * U), 1.0f), inputs, dx);
        Matrix full(std::size_t(D * width), 0.0f);
        for (std::int64_t i = 0; i < D; ++i)
            for (std::int64_t u = 0; u < U; ++u)
                full[std::size_t(i * width + used[std::size_t(u)])] = compact[std::size_t(i * U + u)];
        scatterEmbeddingGradient(m_net, full, gradients);
        for (std::size_t i = 0; i < gradients.size(); ++i) // masked weights (a missing bias) get none
            for (std::size_t j = 0; j < gradients[i].size(); ++j)
                if (masks[i][j] == 0.0f)
                    gradients[i][j] = 0.0f;
    }

private:
    enum class Epilogue : std::uint8_t { Round, Activate, Residual };

    // What the forward keeps for the backward, in bands (a PE row's share of each, as the ops left
    // them or as a row keeps of a norm's outputs); the backward gathers each again where it needs
    // it whole (recall()).
    struct Saved {
        Matrix in; // x
        Matrix a; // LN1(x)
        Matrix qkv;
        Matrix out; // o, by heads
        Matrix lse; // at the heads' rows
        Matrix mid;
        Matrix b; // LN2(mid)
        Matrix u; // fc1's z
        Matrix h; // act(u)
    };

    // A saved operand gathered again from its bands for the op that needs it whole.
    Matrix recall(const std::string& op, Pass pass, const Matrix& values, std::int64_t dims,
        std::vector<std::uint32_t> bounds = {})
    {
        return m_kernels.gather(op, pass, values, dims, std::move(bounds));
    }

    const std::vector<float>& weight(std::size_t index) const { return (*m_weights)[index]; }
    std::string tensorName(std::int64_t block, TrainTransformer::BlockTensor which) const
    {
        static const char* const kNames[] = { "ln1", "qkv", "proj", "ln2", "fc1", "fc2" };
        return "h" + std::to_string(block) + "." + kNames[which];
    }

    // The streamed GEMM, its epilogue on the bands and the gather: forward Y = W X (X with its
    // ones when W has a bias column), or the delta dX = W^T dY over W's first `inputs` columns.
    // `residual`: the stream the residual epilogue adds to; `preActivation`: the forward's z
    // (returned through it) or, for an activation's backward, its input.
    Matrix linear(const std::string& op, Pass pass, const std::vector<float>& w, std::int64_t outputs,
        std::int64_t width, const Matrix& resident, Epilogue epilogue, const Matrix* residual = nullptr,
        Matrix* preActivation = nullptr, std::int64_t inputs = 0, bool gathered = true)
    {
        const bool forward = pass == Pass::Forward;
        const std::int64_t dims = forward ? outputs : inputs;
        const std::vector<float>* keep = nullptr; // the embedding's rows: every weight
        for (std::size_t i = 0; i < m_weights->size(); ++i)
            if (&(*m_weights)[i] == &w)
                keep = &(*m_masks)[i];
        const Matrix sums = m_kernels.streamGemm(op, pass, outputs, inputs, width, w, resident, keep);
        LocalStepSpec spec;
        spec.name = op + (forward ? "" : " delta") + " epilogue";
        spec.dims = dims;
        spec.input = sums;
        spec.activated = epilogue == Epilogue::Activate;
        spec.activation = m_net.activation;
        spec.op = LocalStepSpec::Op::Activate;
        if (epilogue == Epilogue::Residual) {
            spec.op = LocalStepSpec::Op::Residual;
            spec.saved = *residual;
        } else if (epilogue == Epilogue::Activate && !forward) {
            spec.op = LocalStepSpec::Op::ActivateBackward;
            spec.saved = *preActivation;
        }
        const bool keepsZ = forward && epilogue == Epilogue::Activate;
        auto [band, z] = m_kernels.local(std::move(spec), op, "epilogue", keepsZ ? dims : 0);
        if (!forward)
            m_kernels.records.back().pass = Pass::BackwardDelta;
        if (keepsZ)
            *preActivation = std::move(z);
        return gathered ? m_kernels.gather(op, pass, band, dims) : band;
    }

    Matrix norm(std::size_t tensor, const std::string& op, const Matrix& x)
    {
        LocalStepSpec spec;
        spec.name = op;
        spec.op = LocalStepSpec::Op::LayerNorm;
        spec.dims = m_net.hidden;
        spec.input = x;
        spec.params = weight(tensor);
        spec.epsilon = m_net.epsilon;
        return m_kernels.local(std::move(spec), op, "layer_norm", 0).first;
    }

    // dx = S(carry + S(LN'(dy))) at every PE; the norm's weight and bias gradients from its terms.
    Matrix normBackward(std::size_t tensor, const std::string& op, const Matrix& x, const Matrix& dy, Matrix carry)
    {
        const std::int64_t D = m_net.hidden;
        LocalStepSpec spec;
        spec.name = op + " backward";
        spec.op = LocalStepSpec::Op::LayerNormBackward;
        spec.dims = D;
        spec.input = dy;
        spec.saved = x;
        spec.carry = std::move(carry);
        spec.params = weight(tensor);
        spec.epsilon = m_net.epsilon;
        auto [dx, terms] = m_kernels.local(std::move(spec), op, "layer_norm", 2 * D);
        Matrix ones(std::size_t(m_layout.padded), 0.0f);
        std::fill_n(ones.begin(), m_layout.tokens, 1.0f);
        gradients[tensor] = m_kernels.gradient(op, 1, 2 * D, (*m_masks)[tensor], terms, ones);
        return dx;
    }

    RowAttentionSpec attentionSpec(const std::string& op, RowAttentionSpec::Mode mode, const Saved& s) const
    {
        RowAttentionSpec spec;
        spec.name = op;
        spec.mode = mode;
        spec.sequence = m_net.sequence;
        spec.heads = m_net.heads;
        spec.headDim = m_net.headDim();
        spec.qkv = s.qkv;
        return spec;
    }

    // The bounds of a gather by heads: `perHead` values a head on the first rows, none below.
    std::vector<std::uint32_t> headBands(std::int64_t perHead) const
    {
        std::vector<std::uint32_t> bounds(std::size_t(m_layout.frame.h) + 1);
        for (std::size_t r = 0; r < bounds.size(); ++r)
            bounds[r] = std::uint32_t(std::min<std::int64_t>(std::int64_t(r), m_net.heads) * perHead);
        return bounds;
    }

    Matrix blockForward(std::int64_t b, const Matrix& x)
    {
        const std::int64_t D = m_net.hidden;
        const std::int64_t F = m_net.ffn;
        const auto index = [&](TrainTransformer::BlockTensor which) { return m_net.blockTensor(b, which); };
        Saved& s = m_saved[std::size_t(b)];
        s.in = x;
        s.a = norm(index(TrainTransformer::Ln1), tensorName(b, TrainTransformer::Ln1), x);
        s.qkv = linear(tensorName(b, TrainTransformer::Qkv), Pass::Forward, weight(index(TrainTransformer::Qkv)), 3 * D,
            D + 1, withOnes(m_layout.padded, s.a, D), Epilogue::Round);
        const std::string attention = "h" + std::to_string(b) + ".attention";
        auto [out, lse] = m_kernels.attention(attentionSpec(attention, RowAttentionSpec::Mode::Forward, s), D);
        s.lse = std::move(lse);
        s.out = m_kernels.gather(attention, Pass::Forward, out, D, headBands(m_net.headDim()));
        s.mid = linear(tensorName(b, TrainTransformer::Proj), Pass::Forward, weight(index(TrainTransformer::Proj)), D,
            D + 1, withOnes(m_layout.padded, s.out, D), Epilogue::Residual, &x);
        s.b = norm(index(TrainTransformer::Ln2), tensorName(b, TrainTransformer::Ln2), s.mid);
        s.h = linear(tensorName(b, TrainTransformer::Fc1), Pass::Forward, weight(index(TrainTransformer::Fc1)), F,
            D + 1, withOnes(m_layout.padded, s.b, D), Epilogue::Activate, nullptr, &s.u);
        return linear(tensorName(b, TrainTransformer::Fc2), Pass::Forward, weight(index(TrainTransformer::Fc2)), D,
            F + 1, withOnes(m_layout.padded, s.h, F), Epilogue::Residual, &s.mid);
    }

    Matrix blockBackward(std::int64_t b, const Matrix& dx)
    {
        const std::int64_t D = m_net.hidden;
        const std::int64_t F = m_net.ffn;
        const auto index = [&](TrainTransformer::BlockTensor which) { return m_net.blockTensor(b, which); };
        const auto name = [&](TrainTransformer::BlockTensor which) { return tensorName(b, which); };
        const Saved& s = m_saved[std::size_t(b)];
        const auto& masks = *m_masks;
        const Pass gradient = Pass::BackwardGradient;
        const Matrix h = withOnes(m_layout.padded, recall(name(TrainTransformer::Fc2), gradient, s.h, F), F);
        gradients[index(TrainTransformer::Fc2)]
            = m_kernels.gradient(name(TrainTransformer::Fc2), D, F + 1, masks[index(TrainTransformer::Fc2)], h, dx);
        Matrix u = s.u;
        const Matrix du = linear(name(TrainTransformer::Fc2), Pass::BackwardDelta, weight(index(TrainTransformer::Fc2)),
            D, F + 1, dx, Epilogue::Activate, nullptr, &u, F);
        const Matrix normed = withOnes(m_layout.padded, recall(name(TrainTransformer::Fc1), gradient, s.b, D), D);
        gradients[index(TrainTransformer::Fc1)] = m_kernels.gradient(
            name(TrainTransformer::Fc1), F, D + 1, masks[index(TrainTransformer::Fc1)], normed, du);
        const Matrix db = linear(name(TrainTransformer::Fc1), Pass::BackwardDelta, weight(index(TrainTransformer::Fc1)),
            F, D + 1, du, Epilogue::Round, nullptr, nullptr, D);
        const Matrix mid = recall(name(TrainTransformer::Ln2), Pass::BackwardDelta, s.mid, D);
        const Matrix dMid = normBackward(index(TrainTransformer::Ln2), name(TrainTransformer::Ln2), mid, db, dx);
        const Matrix o = withOnes(
            m_layout.padded, recall(name(TrainTransformer::Proj), gradient, s.out, D, headBands(m_net.headDim())), D);
        gradients[index(TrainTransformer::Proj)]
            = m_kernels.gradient(name(TrainTransformer::Proj), D, D + 1, masks[index(TrainTransformer::Proj)], o, dMid);
        const Matrix dOut = linear(name(TrainTransformer::Proj), Pass::BackwardDelta,
            weight(index(TrainTransformer::Proj)), D, D + 1, dMid, Epilogue::Round, nullptr, nullptr, D);
        recall("h" + std::to_string(b) + ".attention", Pass::BackwardDelta, s.qkv, 3 * D);
        const Matrix dqkv = attentionBackward(b, s, dOut);
        const Matrix a = withOnes(m_layout.padded, recall(name(TrainTransformer::Qkv), gradient, s.a, D), D);
        gradients[index(TrainTransformer::Qkv)] = m_kernels.gradient(
            name(TrainTransformer::Qkv), 3 * D, D + 1, masks[index(TrainTransformer::Qkv)], a, dqkv);
        const Matrix da = linear(name(TrainTransformer::Qkv), Pass::BackwardDelta, weight(index(TrainTransformer::Qkv)),
            3 * D, D + 1, dqkv, Epilogue::Round, nullptr, nullptr, D);
        const Matrix in = recall(name(TrainTransformer::Ln1), Pass::BackwardDelta, s.in, D);
        return normBackward(index(TrainTransformer::Ln1), name(TrainTransformer::Ln1), in, da, dMid);
    }

    // dQ from one pass, dK and dV from the other, on the same PEs; gathered by heads together.
    Matrix attentionBackward(std::int64_t b, const Saved& s, const Matrix& dOut)
    {
        const std::int64_t D = m_net.hidden;
        const std::int64_t hd = m_net.headDim();
        const std::string op = "h" + std::to_string(b) + ".attention";
        RowAttentionSpec spec = attentionSpec(op, RowAttentionSpec::Mode::QueryGrad, s);
        spec.out = s.out;
        spec.lse = s.lse;
        spec.dOut = dOut;
        const Matrix dq = m_kernels.attention(spec, 3 * D).first;
        spec.mode = RowAttentionSpec::Mode::KeyGrad;
        const Matrix dkdv = m_kernels.attention(std::move(spec), 3 * D).first;
        Matrix dqkv(dq.size());
        for (std::size_t i = 0; i < dqkv.size(); ++i)
            dqkv[i] = std::int64_t(i) % (3 * hd) < hd ? dq[i] : dkdv[i];
        return m_kernels.gather(op, Pass::BackwardDelta, dqkv, 3 * D, headBands(3 * hd));
    }

    void headBackward(const Matrix& dz)
    {
        const std::int64_t D = m_net.hidden;
        const std::int64_t V = m_net.vocab;
        const Matrix normed = withOnes(m_layout.padded, recall("lm_head", Pass::BackwardGradient, m_finalOut, D), D);
        gradients[m_net.head()] = m_kernels.gradient("lm_head", V, D + 1, (*m_masks)[m_net.head()], normed, dz);
        m_delta = m_kernels.columnReduce("lm_head", Pass::BackwardDelta,
            m_kernels.streamGemmPartials("lm_head", V, D, D + 1, weight(m_net.head()), dz, &(*m_masks)[m_net.head()]),
            D);
    }

    Matrix softmaxLoss(const Matrix& logits, const TrainTokens& tokens)
    {
        std::vector<std::int32_t> labels(std::size_t(m_layout.padded), -1);
        std::copy(tokens.labels.begin(), tokens.labels.end(), labels.begin());
        BandedLossSpec spec;
        spec.name = "loss";
        spec.dims = m_net.vocab;
        spec.logits = logits;
        spec.labels = std::move(labels);
        spec.gradientScale = float(m_lossScale) / float(m_layout.tokens);
        auto [dz, perToken] = m_kernels.bandedLoss(std::move(spec));
        float total = 0.0f;
        for (std::int64_t t = 0; t < m_layout.tokens; ++t)
            total += perToken[std::size_t(t)];
        loss = total / float(m_layout.tokens);
        return dz;
    }

    const TrainTransformer& m_net;
    const StepLayout& m_layout;
    double m_lossScale = 1.0;
    StepKernels m_kernels;
    const std::vector<std::vector<float>>* m_weights = nullptr;
    const std::vector<std::vector<float>>* m_masks = nullptr;
    std::vector<Saved> m_saved;
    Matrix m_finalIn;
    Matrix m_finalOut;
    Matrix m_delta;
};

// T: as few tokens a PE as the wafer's columns allow, such that a column holds a part of one
// sequence or whole sequences; R: the widest op's outputs or inputs, up to the wafer's rows.
// The fewest tokens a PE, T, the wafer's columns allow such that a column holds a part of one
// sequence (T divides S) or whole sequences (T a multiple of S dividing the micro-batch's).
std::int64_t decoderTokensPerPe(std::int64_t samples, std::int64_t sequence, int columns)
{
    const std::int64_t tokens = samples * sequence;
    const std::int64_t fewest = (tokens + columns - 1) / columns;
    if (fewest <= sequence) {
        std::int64_t T = fewest;
        while (sequence % T != 0) // at most S steps
            ++T;
        return T;
    }
    std::int64_t k = (fewest + sequence - 1) / sequence;
    while (samples % k != 0) // at most the micro-batch's samples
        ++k;
    return k * sequence;
}

StepLayout decoderLayout(const TrainTransformer& net, const SystemSpec& system, const TrainRunOptions& options,
    std::int64_t samples, std::int64_t T)
{
    const WaferSpec& wafer = system.wafer;
    const std::int64_t tokens = samples * net.sequence;
    const std::int64_t widest = std::max({ 3 * net.hidden, net.ffn + 1, net.vocab });
    const int rows = int(std::min<std::int64_t>(wafer.usableHeight, widest));
    return stepLayout(system, options, net.storage, Frame { 0, 0, int(tokens / T), rows, false }, int(T), tokens);
}

// What the kernels' 16-bit indices cannot name: a stream's inner index and a gradient's output and
// input (StreamGemmKernel, StreamGradientKernel).
std::optional<std::string> beyondIndices(const TrainTransformer& net, std::int64_t tokens)
{
    constexpr std::int64_t kLimit = 0xffff;
    const std::int64_t used = std::min(net.vocab, tokens) + std::min(net.sequence, tokens);
    for (const auto& [size, what] : { std::pair { net.vocab, "a vocabulary of " },
             std::pair { 3 * net.hidden, "a fused q, k and v of " }, std::pair { net.ffn + 1, "a feed-forward of " },
             std::pair { used, "an embedding step over table rows numbering " } })
        if (size >= kLimit)
            return std::string(what) + std::to_string(size)
                + ": the training kernels' wavelets and gradient pairs name at most 65,534 indices";
    return std::nullopt;
}

// What a PE holds through a step: the forward's saved operands in bands (16-bit, a row's share of
// each, as recall() gathers them again) and the loss's dz on its band, the embedding's one-hot
// inputs, and beside them the largest kernel's working set: a GEMM's resident input, its band's
// sums and delta and a chunk of its gradient's shares; a gather's whole outputs (FP32); a norm's
// operands at every PE.
std::int64_t decoderBytesPerPe(const TrainTransformer& net, const StepLayout& layout)
{
    const std::int64_t T = layout.tokensPerPe;
    const std::int64_t D = net.hidden;
    const std::int64_t F = net.ffn;
    const std::int64_t R = layout.frame.h;
    const auto band = [&](std::int64_t dims) { return (dims + R - 1) / R; };
    const std::int64_t saved
        = (net.blocks * (4 * band(D) + band(3 * D) + net.headDim() + 2 * band(F)) + 2 * band(D) + band(net.vocab)) * T
        * 2;
    const std::int64_t used = std::min(net.vocab, layout.tokens) + std::min(net.sequence, layout.tokens);
    const std::int64_t embedding = used * T * 2;
    std::int64_t working = 0;
    for (const auto& [outputs, width] : { std::pair { 3 * D, D + 1 }, std::pair { F, D + 1 }, std::pair { D, F + 1 },
             std::pair { net.vocab, D + 1 }, std::pair { D, used } })
        working = std::max(working,
            width * T * 2 + band(outputs) * T * 6 + std::min<std::int64_t>(kGradientChunk, band(outputs) * width) * 4);
    for (const std::int64_t dims : { 3 * D, F, D })
        working = std::max(working, (dims + band(dims)) * T * 4);
    // The attention's backward at a head's row: its tile, two blocks that come, k, v, O, dK, dV
    // and its outputs.
    working = std::max(working, (13 * net.headDim() + 4) * T * 4);
    working = std::max({ working, 5 * D * T * 4, 3 * band(net.vocab) * T * 4 }); // LN's backward: x, dy, carry, terms
    return saved + embedding + working;
}

} // namespace

Expected<TrainRunResult> runDecoderTrainCycleLevel(
    const ModelGraph& graph, const SystemSpec& system, const TrainRunOptions& options)
{
    Expected<TrainTransformer> netOr = trainTransformerOf(graph, options.layers, options.sequence);
    if (!netOr)
        return netOr.error();
    const TrainTransformer& net = *netOr;
    const Clock::time_point built = Clock::now();
    TrainRunResult result;
    result.model = graph.config.name;
    result.system = system.name;
    result.microBatch = options.microBatch > 0 ? options.microBatch : 1;
    result.tokens = result.microBatch * net.sequence;
    result.layers = int(net.blocks);
    result.clockHz = system.wafer.clockHz;
    if (const std::optional<std::string> beyond = beyondIndices(net, result.tokens))
        return Diagnostic { "--level", 0, 0, "cycle-level training of " + graph.config.name + ": " + *beyond,
            Diagnostic::Kind::CannotMap };
    const std::int64_t T = decoderTokensPerPe(result.microBatch, net.sequence, system.wafer.usableWidth);
    if (T > 4096)
        return Diagnostic { "--level", 0, 0,
            std::to_string(T) + " tokens a PE: more than a PE's SRAM holds of a step; a smaller --micro_batch_size or "
                + "--max_sequence_length fits",
            Diagnostic::Kind::CannotMap };
    const StepLayout layout = decoderLayout(net, system, options, result.microBatch, T);
    result.rows = layout.frame.h;
    result.columns = layout.frame.w;
    result.tokensPerPe = layout.tokensPerPe;
    result.ioWaveletsPerCycle = layout.ioWaveletsPerCycle;
    result.edgeStartCycles = layout.edgeStart;
    const fabric::StaticColorFabric::EdgeRate pace = paceOf(layout, std::size_t(layout.frame.h));
    result.paceWavelets = pace.wavelets;
    result.paceCycles = pace.cycles;
    if (net.heads > layout.frame.h)
        return Diagnostic { "--level", 0, 0,
            std::to_string(net.heads) + " heads on " + std::to_string(layout.frame.h)
                + " PE rows: the row attention takes a head a row",
            Diagnostic::Kind::CannotMap };
    if (const std::int64_t bytes = decoderBytesPerPe(net, layout); bytes > system.wafer.sramPerPeBytes)
        return Diagnostic { "--level", 0, 0,
            "a PE would hold " + std::to_string(bytes) + " bytes of the step's activations and working set, more "
                + "than its " + std::to_string(system.wafer.sramPerPeBytes)
                + "; a smaller --micro_batch_size, --max_sequence_length or --layers fits",
            Diagnostic::Kind::CannotMap };

    TrainState state = initialState(net, options.seed, trainOptimizer(graph.config, options.learningRate));
    if (state.optimizer.learningRate(0) <= 0.0)
        result.notes.push_back("the first step's learning rate is 0 (the config's schedule warms up from 0, or it "
                               "gives none this step can read): the weights do not change; --learning_rate sets one");
    result.buildS = secondsSince(built);
    result.notes.push_back("weight streaming on " + std::to_string(layout.frame.h) + " x "
        + std::to_string(layout.frame.w) + " PEs, " + std::to_string(layout.tokensPerPe)
        + " token(s) a PE; a head a PE row in the attention; each kernel runs on the fabric after the one before, "
          "loaded with what that one left on the same PEs");
    result.notes.push_back("the embedding is the linear layer of the one-hot token and position over the tables' rows "
                           "the step uses: MemoryX streams those rows in and takes their gradients");
    result.notes.push_back("the gradients leave through the west edge at the I/O's pace, each row's share of it; "
                           "the step's kernels run one after another, with no overlap between them yet");
    if (graph.config.batchSize > result.microBatch || graph.config.sequenceLength > net.sequence) {
        // What the config's own micro-batch would take, and why it is not the default.
        TrainTransformer full = net;
        full.sequence = std::max(net.sequence, graph.config.sequenceLength);
        const std::int64_t samples = std::max(result.microBatch, graph.config.batchSize);
        const std::int64_t bigT = decoderTokensPerPe(samples, full.sequence, system.wafer.usableWidth);
        const StepLayout big = decoderLayout(full, system, options, samples, std::min<std::int64_t>(bigT, 1 << 20));
        result.notes.push_back("the config's batch, " + std::to_string(samples) + " sequences of "
            + std::to_string(full.sequence) + " tokens, would hold " + std::to_string(big.tokensPerPe)
            + " tokens a PE and " + std::to_string(decoderBytesPerPe(full, big) / 1024)
            + " KiB a PE on this layout, and take about " + std::to_string(samples * full.sequence / result.tokens)
            + " times this step's simulation: the default is one sequence of up to " + std::to_string(kDefaultSequence)
            + " tokens (--micro_batch_size, --max_sequence_length)");
    }
    const std::int64_t perStep = kernelsPerStep(net);
    std::optional<TrainTokens> tokens;
    const auto onFabric = [&](int step, const TrainWeights& weights, const TrainWeights& masks, double lossScale) {
        tokens = trainTokens(net, result.microBatch, options.seed, step);
        DecoderStep fabricStep(net, layout, lossScale, options.progress, step * perStep, options.steps * perStep);
        fabricStep.run(weights, masks, *tokens);
        if (fabricStep.records().size() != std::size_t(perStep))
            throw std::logic_error("the step ran " + std::to_string(fabricStep.records().size()) + " kernels, not the "
                + std::to_string(perStep) + " its progress counts");
        return FabricStepOutcome { fabricStep.loss, std::move(fabricStep.gradients), std::move(fabricStep.records()),
            fabricStep.peakSram() };
    };
    const auto onReference
        = [&](int, const TrainWeights& weights, const TrainWeights& masks, double lossScale, bool withBounds) {
              return referenceStep(net, weights, masks, *tokens, { layout.tokensPerPe, layout.frame.h }, lossScale,
                  withBounds, Rounding(net.storage));
          };
    if (std::optional<Diagnostic> failed
        = runTrainSteps(result, state, net.storage, options.steps, onFabric, onReference))
        return *failed;
    if (result.peakSramBytesPerPe > std::size_t(system.wafer.sramPerPeBytes))
        result.notes.push_back("a kernel's PEs held up to " + std::to_string(result.peakSramBytesPerPe)
            + " bytes, more than a PE's " + std::to_string(system.wafer.sramPerPeBytes)
            + ": the step's estimate of its SRAM fell short");
    return result;
}

} // namespace waferscope::core::cyclelevel
