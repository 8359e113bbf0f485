// No header of its own: defines readTraining, declared in modelsections.h beside readModelShape.
// Batch, sequence, precision, optimizer, sparsity and run settings, from either schema.
#include "core/common/text.h"
#include "core/model/modelsections.h"

namespace waferscope::core {

namespace {

constexpr std::int64_t kMaxBatch = 1 << 27;
constexpr std::int64_t kMaxSequence = 1 << 24;

// micro_batch_size may be a number, null, or the Model Zoo's "auto"/"explore" (compiler's choice).
std::int64_t readMicroBatch(const YamlFields& fields, const YamlSection& section, const std::string& key)
{
    const std::optional<YAML::Node> node = fields.value(section, key);
    if (!node)
        return 0;
    if (node->IsScalar() && (node->Scalar() == "auto" || node->Scalar() == "explore"))
        return 0;
    return fields.integer(section, key, 1, kMaxBatch).value_or(0);
}

// trainer.init.callbacks: [{ScopedTrainFlags: {csx.performance.micro_batch_size: N}}, ...]
std::int64_t microBatchFromCallbacks(const YamlFields& fields, const YAML::Node& callbacks)
{
    if (!callbacks.IsDefined() || !callbacks.IsSequence())
        return 0;
    for (const YAML::Node& callback : callbacks) {
        if (!callback.IsMap())
            continue;
        for (auto it = callback.begin(); it != callback.end(); ++it) {
            const std::string name = it->first.Scalar();
            if ((name != "ScopedTrainFlags" && name != "GlobalFlags") || !it->second.IsMap())
                continue;
            const YamlSection flags { it->second, it->first.Mark(), name };
            if (std::int64_t micro = readMicroBatch(fields, flags, "csx.performance.micro_batch_size"))
                return micro;
        }
    }
    return 0;
}

ModelConfig::Optimizer parseOptimizer(const std::string& given)
{
    const std::string name = toLowerAscii(given);
    using O = ModelConfig::Optimizer;
    if (name == "adamw")
        return O::AdamW;
    if (name == "adam")
        return O::Adam;
    if (name == "sgd")
        return O::Sgd;
    if (name == "adafactor")
        return O::AdaFactor;
    if (name == "lamb")
        return O::Lamb;
    return O::Other;
}

void readBatchAndSequence(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& input = sections.trainInput.present() ? sections.trainInput : sections.evalInput;
    if (config.family == ModelConfig::Family::FcMnist && !input.present()) {
        config.batchSize = 1;
    } else {
        if (!input.present())
            fields.fail(input.keyMark, "missing section '" + input.path + "' with the batch_size");
        config.batchSize = fields.requiredInteger(input, "batch_size", 1, kMaxBatch);
    }
    config.microBatchSize = readMicroBatch(fields, input, "micro_batch_size");
    if (std::int64_t micro = microBatchFromCallbacks(fields, sections.callbacks))
        config.microBatchSize = micro;

    using F = ModelConfig::Family;
    const bool imageTokens
        = config.family == F::VisionTransformer || config.family == F::Dino || config.family == F::Dit;
    if (config.family == ModelConfig::Family::FcMnist) {
        config.sequenceLength = 1; // one image is one sample
    } else if (imageTokens) {
        config.sequenceLength = config.maxPositions; // an image's patches (and [CLS]) are its tokens
    } else if (config.family == ModelConfig::Family::T5 || config.family == ModelConfig::Family::Transformer) {
        config.sequenceLength = fields.integer(input, "src_max_sequence_length", 1, kMaxSequence).value_or(512);
        config.targetSequenceLength
            = fields.integer(input, "tgt_max_sequence_length", 1, kMaxSequence).value_or(config.sequenceLength);
    } else {
        config.sequenceLength
            = fields.integer(input, "max_sequence_length", 1, kMaxSequence).value_or(config.maxPositions);
        // Cerebras's own release files do this (BERT summarization, R1.9): accepted, with a warning.
        if (config.maxPositions > 0 && config.sequenceLength > config.maxPositions
            && config.positions == ModelConfig::Positions::Learned && config.positionTableRows == 0) {
            const YAML::Mark mark = fields.valueMark(input, "max_sequence_length");
            config.warnings.push_back({ mark.line + 1, mark.column + 1,
                "max_sequence_length " + std::to_string(config.sequenceLength) + " exceeds max_position_embeddings "
                    + std::to_string(config.maxPositions) + ": tokens past " + std::to_string(config.maxPositions)
                    + " have no learned position; the graph counts " + std::to_string(config.sequenceLength)
                    + " tokens per sample and a " + std::to_string(config.maxPositions) + "-row position table" });
        }
    }
}

// The settings a training step runs with, from an optimizer mapping (legacy: `optimizer:`;
// trainer: the optimizer's own mapping). Only the cycle level's training step reads them, so a
// value it cannot read is a located warning, not an error that would refuse the whole file.
void readOptimizerSettingsStrictly(const YamlFields& fields, const YamlSection& section, ModelConfig& config)
{
    ModelConfig::OptimizerSettings& settings = config.optimizerSettings;
    settings.momentum = fields.number(section, "momentum", 0.0, 1.0).value_or(0.0);
    if (const std::optional<YAML::Node> betas = fields.value(section, "betas")) {
        if (!betas->IsSequence() || betas->size() != 2)
            fields.fail(betas->Mark(), "'" + section.path + ".betas' must be a list of two numbers in [0, 1)");
        for (std::size_t i = 0; i < 2; ++i) {
            const YAML::Node beta = (*betas)[i];
            double value = -1.0;
            if (!beta.IsScalar() || !YAML::convert<double>::decode(beta, value) || !(value >= 0.0 && value < 1.0))
                fields.fail(beta.Mark(), "'" + section.path + ".betas' must be a list of two numbers in [0, 1)");
            (i == 0 ? settings.beta1 : settings.beta2) = value;
        }
    }
    settings.epsilon = fields.number(section, "eps", 1e-30, 1.0).value_or(settings.epsilon);
    settings.weightDecay = fields.number(section, "weight_decay", 0.0, 1.0).value_or(0.0);
    settings.maxGradientNorm = fields.number(section, "max_gradient_norm", 0.0, 1e30).value_or(0.0);
    if (const std::optional<YAML::Node> scale = fields.value(section, "loss_scaling_factor")) {
        if (scale->IsScalar() && scale->Scalar() == "dynamic")
            settings.lossScale = 0.0;
        else
            settings.lossScale = fields.number(section, "loss_scaling_factor", 1e-30, 1e30).value_or(1.0);
    }
    for (const char* key : { "learning_rate", "lr" }) {
        const std::optional<YAML::Node> rate = fields.value(section, key);
        if (!rate)
            continue;
        if (rate->IsScalar()) {
            settings.learningRate = fields.number(section, key, 0.0, 1e30).value_or(0.0);
            return;
        }
        const YAML::Node pieces = rate->IsSequence() ? *rate : [&] {
            YAML::Node list(YAML::NodeType::Sequence);
            list.push_back(*rate);
            return list;
        }();
        for (std::size_t i = 0; i < pieces.size(); ++i) {
            const YamlSection piece { pieces[i], pieces[i].Mark(),
                section.path + "." + key + "[" + std::to_string(i) + "]" };
            if (!piece.present())
                fields.fail(pieces[i].Mark(), "'" + piece.path + "' must be a mapping with a scheduler");
            ModelConfig::LearningRateSegment segment;
            segment.scheduler = fields.text(piece, "scheduler").value_or("Constant");
            segment.initial = fields.number(piece, "initial_learning_rate", 0.0, 1e30)
                                  .value_or(fields.number(piece, "learning_rate", 0.0, 1e30).value_or(0.0));
            segment.end = fields.number(piece, "end_learning_rate", 0.0, 1e30).value_or(segment.initial);
            for (const char* steps : { "total_iters", "decay_steps", "steps" })
                if (const std::optional<std::int64_t> count = fields.integer(piece, steps, 0, 1'000'000'000'000))
                    segment.steps = *count;
            settings.schedule.push_back(segment);
        }
        return;
    }
}

void readOptimizerSettings(const YamlFields& fields, const YamlSection& section, ModelConfig& config)
{
    try {
        readOptimizerSettingsStrictly(fields, section, config);
    } catch (const InputError& error) {
        config.optimizerSettings = {};
        config.warnings.push_back({ error.diagnostic.line, error.diagnostic.column,
            error.diagnostic.message + "; the cycle level's training step uses the defaults" });
    }
}

void readPrecisionAndOptimizer(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const bool trainer = config.schema == ModelConfig::Schema::Trainer;
    config.fp16Type
        = fields.choice(sections.precision, "fp16_type", { "float16", "bfloat16", "cbfloat16" }).value_or("float16");
    config.mixedPrecision = fields.boolean(sections.precision, trainer ? "enabled" : "mixed_precision").value_or(true);
    config.weightBytes = config.mixedPrecision ? 2 : 4;

    if (!sections.optimizer.present())
        return;
    if (trainer) {
        // trainer.init.optimizer: {AdamW: {...}}, the single key names the optimizer.
        auto first = sections.optimizer.node.begin();
        if (first != sections.optimizer.node.end()) {
            config.optimizer = parseOptimizer(first->first.Scalar());
            if (first->second.IsMap()) {
                const YamlSection settings { first->second, first->first.Mark(), sections.optimizer.path };
                config.optimizerMomentum = fields.number(settings, "momentum", 0.0, 1.0).value_or(0.0) > 0.0;
                readOptimizerSettings(fields, settings, config);
            }
        }
        return;
    }
    if (std::optional<std::string> type = fields.text(sections.optimizer, "optimizer_type"))
        config.optimizer = parseOptimizer(*type);
    config.optimizerMomentum = fields.number(sections.optimizer, "momentum", 0.0, 1.0).value_or(0.0) > 0.0;
    readOptimizerSettings(fields, sections.optimizer, config);
}

void readSparsity(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    const YamlSection& sparsity = sections.sparsity;
    if (!sparsity.present())
        return;
    const std::optional<YAML::Node> level = fields.value(sparsity, "sparsity");
    if (level && !level->IsScalar())
        fields.fail(
            level->Mark(), "'" + sparsity.path + ".sparsity' must be a number in [0, 1) (schedules are not supported)");
    config.sparsity = fields.number(sparsity, "sparsity", 0.0, 1.0).value_or(0.0);
    if (config.sparsity >= 1.0)
        fields.fail(fields.valueMark(sparsity, "sparsity"),
            "'" + sparsity.path + ".sparsity' is 1, expected a fraction of zeros in [0, 1)");
    config.sparsityAlgorithm
        = fields.text(sparsity, "algorithm").value_or(fields.text(sparsity, "type").value_or("static"));
    config.sparsityFilter = fields.textList(sparsity, "param_filter");
}

void readRun(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    config.maxSteps = fields.integer(sections.loop, "max_steps", 0, std::int64_t(1) << 40)
                          .value_or(fields.integer(sections.loop, "num_steps", 0, std::int64_t(1) << 40).value_or(0));
    config.numCsx = fields.integer(sections.cluster, "num_csx", 1, 4096).value_or(1);
    config.checkpointSteps
        = fields
              .integer(sections.checkpoint,
                  config.schema == ModelConfig::Schema::Trainer ? "steps" : "checkpoint_steps", 0,
                  std::int64_t(1) << 40)
              .value_or(
                  fields.integer(sections.checkpoint, "save_checkpoints_steps", 0, std::int64_t(1) << 40).value_or(0));
}

} // namespace

void readTraining(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config)
{
    readBatchAndSequence(fields, sections, config);
    readPrecisionAndOptimizer(fields, sections, config);
    readSparsity(fields, sections, config);
    readRun(fields, sections, config);
    if (config.microBatchSize > 0 && config.microBatchSize * config.numCsx > config.batchSize)
        config.warnings.push_back({ 0, 0,
            "micro_batch_size " + std::to_string(config.microBatchSize) + " x num_csx " + std::to_string(config.numCsx)
                + " exceeds batch_size " + std::to_string(config.batchSize) });
}

} // namespace waferscope::core
