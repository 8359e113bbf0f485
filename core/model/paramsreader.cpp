// No header of its own: defines the params file readers of modelloader.h.
#include "core/model/modelloader.h"

#include "core/common/textfile.h"
#include "core/model/modelsections.h"
#include "core/model/yamldocument.h"

#include <filesystem>

namespace waferscope::core {

namespace {

// Says what kind of YAML a file without a model is, from its top-level sections.
std::string notAModelFile(const YamlFields& fields, const YamlSection& root)
{
    auto has = [&](const char* key) { return fields.value(root, key).has_value(); };
    std::string keys;
    for (auto it = root.node.begin(); it != root.node.end(); ++it)
        if (it->first.IsScalar() && keys.size() < 80)
            keys += (keys.empty() ? "" : ", ") + it->first.Scalar();
    const std::string found = " (top-level keys: " + keys + ")";
    if (has("setup") && (has("processing") || has("dataset")))
        return "this is a Model Zoo data-preparation config (setup/processing sections, for the HDF5 "
               "preprocessing tool), not a model's params file: it defines no model to place or run"
            + found;
    if (has("dask_cluster") || has("pipeline") || has("stages"))
        return "this is a Model Zoo data-curation pipeline config, not a model's params file: it defines no model to "
               "place or run"
            + found;
    if (has("train_input") || has("eval_input") || has("runconfig") || has("optimizer"))
        return "no 'model' section: a legacy params file (train_input/model/optimizer/runconfig) needs one to define "
               "the model"
            + found;
    return "not a Model Zoo params file: it has no 'model' section (legacy schema) and no 'trainer' section (trainer "
           "schema)"
        + found;
}

// TensorFlow-era fine-tuning files name the pretraining config their encoder comes from
// (`model.pretrain_params_path`, relative to the model's folder, the parent of configs/) and
// give only the head's keys. The pretraining model's keys are added where the file does not
// set them itself; that file's own pretrain_params_path is not followed further.
void mergePretrainedModel(const YamlFields& fields, const YamlSection& model, ModelConfig& config)
{
    const std::optional<std::string> given = fields.text(model, "pretrain_params_path");
    if (!given)
        return;
    const YAML::Mark mark = fields.valueMark(model, "pretrain_params_path");
    const std::filesystem::path folder = std::filesystem::path(config.fileName).parent_path();
    std::vector<std::filesystem::path> tried { folder / *given };
    if (folder.filename() == "configs")
        tried.push_back(folder.parent_path() / *given);
    for (const std::filesystem::path& path : tried) {
        std::error_code error;
        if (!std::filesystem::is_regular_file(path, error))
            continue;
        Expected<std::string> text = readTextFile(path.string(), kMaxParamsFileBytes, "Model Zoo params YAML file");
        if (!text)
            fields.fail(mark, "pretrain_params_path: " + text.error().format());
        std::vector<ParamsWarning> ignored;
        const YAML::Node pretrained = parseParamsDocument(text.value(), path.string(), ignored);
        const YAML::Node pretrainedModel = pretrained["model"];
        if (!pretrainedModel.IsDefined() || !pretrainedModel.IsMap())
            fields.fail(mark, "pretrain_params_path '" + path.string() + "' has no 'model' section");
        YAML::Node target = model.node;
        const YAML::Node lookup = model.node;
        for (auto it = pretrainedModel.begin(); it != pretrainedModel.end(); ++it)
            if (it->first.IsScalar() && !lookup[it->first.Scalar()].IsDefined())
                target.force_insert(it->first, it->second);
        config.warnings.push_back({ mark.line + 1, mark.column + 1,
            "the model's shape comes from the pretraining config '" + path.string() + "'" });
        return;
    }
    std::string list;
    for (const std::filesystem::path& path : tried)
        list += (list.empty() ? "" : " or ") + path.string();
    fields.fail(mark, "pretrain_params_path: no such file (looked for " + list + ")");
}

} // namespace

ParamsSections withModelSection(const ParamsSections& sections, const YamlSection& model)
{
    return ParamsSections { model, sections.trainInput, sections.evalInput, sections.optimizer, sections.precision,
        sections.sparsity, sections.loop, sections.checkpoint, sections.cluster, sections.callbacks };
}

ParamsSections locateSections(const YamlFields& fields, const YamlSection& root, ModelConfig& config)
{
    ParamsSections sections;
    if (fields.value(root, "trainer")) {
        config.schema = ModelConfig::Schema::Trainer;
        const YamlSection trainer = fields.section(root, "trainer", true);
        const YamlSection init = fields.section(trainer, "init", true);
        const YamlSection fit = fields.section(trainer, "fit");
        sections.model = fields.section(init, "model", true);
        sections.trainInput = fields.section(fit, "train_dataloader");
        sections.evalInput = fields.section(fields.section(trainer, "validate"), "val_dataloader");
        sections.optimizer = fields.section(init, "optimizer");
        sections.precision = fields.section(init, "precision");
        sections.sparsity = fields.section(init, "sparsity");
        sections.loop = fields.section(init, "loop");
        sections.checkpoint = fields.section(init, "checkpoint");
        sections.cluster = fields.section(fields.section(init, "backend"), "cluster_config");
        if (std::optional<YAML::Node> callbacks = fields.value(init, "callbacks"))
            sections.callbacks = *callbacks;
        return sections;
    }
    if (!fields.value(root, "model"))
        fields.fail(root.keyMark, notAModelFile(fields, root));
    sections.model = fields.section(root, "model", true);
    sections.trainInput = fields.section(root, "train_input");
    sections.evalInput = fields.section(root, "eval_input");
    sections.optimizer = fields.section(root, "optimizer");
    sections.precision = sections.model;
    sections.sparsity = fields.section(root, "sparsity");
    sections.loop = fields.section(root, "runconfig");
    sections.checkpoint = sections.loop;
    sections.cluster = sections.loop;
    // R1.6 TensorFlow weight-streaming files use TF-estimator run keys and TFRecord processors.
    const std::string processor = fields.text(sections.trainInput, "data_processor").value_or("");
    const bool tfEstimator = fields.value(sections.loop, "save_checkpoints_steps").has_value()
        || processor.find("TfRecords") != std::string::npos;
    config.schema = tfEstimator ? ModelConfig::Schema::TfWeightStreaming : ModelConfig::Schema::Legacy;
    return sections;
}

Expected<ModelConfig> readParamsText(std::string_view text, const std::string& fileName)
{
    try {
        ModelConfig config;
        config.fileName = fileName;
        const YAML::Node document = parseParamsDocument(text, fileName, config.warnings);
        const YamlFields fields(fileName);
        if (document.IsMap())
            for (auto it = document.begin(); it != document.end(); ++it)
                if (it->first.IsScalar() && it->first.Scalar() == "jobs")
                    fields.fail(it->first.Mark(),
                        "this is a WaferScope jobs file (it has a top-level 'jobs:' key), not a Model Zoo params "
                        "file; schedule it with 'waferscope-cli cluster --jobs FILE'");
        const ParamsSections sections = locateSections(fields, fields.root(document), config);
        mergePretrainedModel(fields, sections.model, config);
        readFamily(fields, sections, config);
        readModelShape(fields, sections, config);
        readTraining(fields, sections, config);
        return config;
    } catch (const InputError& error) {
        return error.diagnostic;
    } catch (const YAML::Exception& error) {
        return yamlDiagnostic(error, fileName);
    }
}

Expected<std::string> readParamsBytes(const std::string& path)
{
    return readTextFile(path, kMaxParamsFileBytes, "Model Zoo params YAML file");
}

Expected<ModelConfig> readParamsFile(const std::string& path)
{
    Expected<std::string> text = readParamsBytes(path);
    if (!text)
        return text.error();
    return readParamsText(text.value(), path);
}

Expected<LoadedModelFile> loadModelFile(const std::string& path)
{
    Expected<std::string> bytes = readParamsBytes(path);
    if (!bytes)
        return bytes.error();
    Expected<ModelConfig> config = readParamsText(bytes.value(), path);
    if (!config)
        return config.error();
    return LoadedModelFile { path, std::move(bytes).value(), buildModelGraph(config.value()) };
}

Expected<ModelGraph> loadModel(const std::string& path)
{
    Expected<ModelConfig> config = readParamsFile(path);
    if (!config)
        return config.error();
    return buildModelGraph(config.value());
}

} // namespace waferscope::core
