#pragma once

// Internal to core/model: the parts of readParamsText(), one per area of the config.

#include "core/model/yamlfields.h"

namespace waferscope::core {

// Where each area of the config lives in the schema at hand.
struct ParamsSections {
    YamlSection model; // model: / trainer.init.model
    YamlSection trainInput; // train_input: / trainer.fit.train_dataloader
    YamlSection evalInput; // eval_input: / trainer.validate.val_dataloader
    YamlSection optimizer; // optimizer: / trainer.init.optimizer
    YamlSection precision; // model: (legacy) / trainer.init.precision
    YamlSection sparsity; // sparsity: / trainer.init.sparsity
    YamlSection loop; // runconfig: / trainer.init.loop
    YamlSection checkpoint; // runconfig: / trainer.init.checkpoint
    YamlSection cluster; // runconfig: / trainer.init.backend.cluster_config
    YAML::Node callbacks; // trainer.init.callbacks (sequence), undefined for legacy
};

// `sections` with another model section (a DPO policy, a DPR encoder). Built by copying, never
// by assigning: assigning to a YAML::Node that holds a node overwrites that node in the tree.
ParamsSections withModelSection(const ParamsSections& sections, const YamlSection& model);

ParamsSections locateSections(const YamlFields& fields, const YamlSection& root, ModelConfig& config);
void readFamily(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config);
void readModelShape(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config);
void readTraining(const YamlFields& fields, const ParamsSections& sections, ModelConfig& config);

} // namespace waferscope::core
