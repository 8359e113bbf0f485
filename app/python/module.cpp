// No header of its own: the module's entry point (PYBIND11_MODULE); pyrun.cpp joins it via pycommon.h.
// The `waferscope` Python module: hardware(), load(), Model and Plan (this file); Run and Frame
// (pyrun.cpp). Every result is what the CLI prints for the same job, parsed from the same JSON.
#include "app/python/pycommon.h"

#include "core/common/names.h"
#include "core/hardware/builtinpresets.h"
#include "core/hardware/hardwarejson.h"
#include "core/model/graphjson.h"
#include "core/model/modelloader.h"
#include "core/sweeps/scaling.h"

#include <pybind11/stl.h>

#include <cmath>

namespace waferscope::python {

namespace {

constexpr const char* kVersion = "0.1.0";

template <class Enum>
Enum choice(const std::string& value, const char* argument)
{
    if (const std::optional<Enum> parsed = core::fromName<Enum>(checkedText(value, argument)))
        return *parsed;
    raise(core::Diagnostic { argument, 0, 0,
        std::string(argument) + " expects " + core::choiceList(core::allNames<Enum>()) + ", got '" + value + "'" });
}

core::SystemSpec preset(const std::string& name)
{
    core::Expected<core::SystemSpec> system = core::loadBuiltinPreset(checkedText(name, "system"));
    if (!system)
        raise(system.error());
    return std::move(system).value();
}

core::engine::Calibration calibrationOf(const std::optional<std::string>& name)
{
    if (!name)
        return core::engine::builtinCalibration();
    core::Expected<core::engine::Calibration> calibration
        = core::engine::resolveCalibration(checkedText(*name, "calibration"));
    if (!calibration)
        raise(calibration.error());
    return std::move(calibration).value();
}

// The CLI's bounds (run --batch_size, --prompt_tokens).
constexpr std::int64_t kMaxBatch = std::int64_t(1) << 24;
constexpr std::int64_t kMaxPromptTokens = std::int64_t(1) << 24;

// An optional count: absent is 0 (the config's, or the default); given, it must be 1..most.
std::int64_t positive(std::optional<std::int64_t> value, const char* argument, std::int64_t most)
{
    if (value && (*value < 1 || *value > most))
        raise(core::Diagnostic { argument, 0, 0,
            std::string(argument) + " expects an integer 1.." + std::to_string(most) + " (or None), got "
                + std::to_string(*value) });
    return value.value_or(0);
}

// Systems SwarmX can join for data-parallel training: a generation without it (CS-1) has one.
void checkSystemCount(int numCsx, const core::SystemSpec& system)
{
    const int most = system.swarmx.supported ? system.swarmx.maxSystems : 1;
    if (numCsx < 1 || numCsx > most)
        raise(core::Diagnostic { "num_csx", 0, 0,
            "num_csx expects " + (most == 1 ? std::string("1") : "an integer 1.." + std::to_string(most)) + " for "
                + system.displayName + ", got " + std::to_string(numCsx)
                + (system.swarmx.supported ? ": SwarmX joins at most " + std::to_string(most) + " systems"
                                           : ": it has no SwarmX, so it trains on one system only") });
}

class Model {
public:
    explicit Model(std::shared_ptr<const LoadedModel> model)
        : m_model(std::move(model))
        , m_info(fromJson(core::modelGraphToJson(m_model->graph)))
    {
    }
    const LoadedModel& loaded() const { return *m_model; }
    py::object info() const { return m_info; }
    py::object get(const char* key) const { return m_info[key]; }

    py::object compile(const std::string& system, int numCsx, const std::string& mode, const std::string& execution,
        const std::optional<std::string>& calibration) const
    {
        auto compiled = std::make_shared<CompiledPlan>();
        compiled->model = m_model;
        compiled->system = preset(system);
        checkSystemCount(numCsx, compiled->system);
        compiled->calibration = calibrationOf(calibration);
        const core::RunMode kind = choice<core::RunMode>(mode, "mode");
        compiled->options.mode = core::compileModeFor(kind);
        compiled->options.execution = choice<core::ExecutionChoice>(execution, "execution");
        if (kind == core::RunMode::Inference && numCsx != 1)
            raise(core::Diagnostic { "num_csx", 0, 0,
                "num_csx is for training and eval: inference places the model on as many wafers as it needs, got "
                    + std::to_string(numCsx) });
        compiled->options.numSystems = numCsx;
        std::atomic<bool> cancel { false };
        core::engine::RunOptions token { .mode = core::RunMode::Inference };
        token.cancelled = [&cancel] { return cancel.load(); };
        core::Expected<core::ExecutionPlan> plan = interruptible(
            [&] {
                return core::study::compileStudyPlan(m_model->graph, m_model->path, compiled->system, compiled->options,
                    compiled->calibration, token, "compile");
            },
            cancel);
        if (!plan)
            raise(plan.error());
        compiled->plan = std::move(plan).value();
        return makePlan(std::move(compiled), kind);
    }

    py::list scale(const std::string& system, const std::vector<int>& counts, const std::string& mode,
        const std::string& execution, std::optional<std::int64_t> batchSize,
        const std::optional<std::string>& calibration) const
    {
        core::sweeps::ScalingOptions options;
        options.numCsx = counts;
        options.mode = choice<core::RunMode>(mode, "mode");
        options.execution = choice<core::ExecutionChoice>(execution, "execution");
        options.globalBatch = positive(batchSize, "batch_size", kMaxBatch);
        const core::SystemSpec spec = preset(system);
        if (counts.empty())
            raise(core::Diagnostic { "num_csx", 0, 0, "num_csx expects a list of system counts, got an empty one" });
        for (const int count : counts)
            checkSystemCount(count, spec);
        const core::engine::Calibration constants = calibrationOf(calibration);
        std::atomic<bool> cancel { false };
        options.cancelled = [&cancel] { return cancel.load(); };
        core::Expected<core::sweeps::ScalingSweep> sweep
            = interruptible([&] { return core::sweeps::scale(m_model->graph, spec, options, constants); }, cancel);
        if (!sweep)
            raise(sweep.error());
        return fromJson(core::sweeps::scalingToJson(*sweep))["points"];
    }

    static py::object makePlan(std::shared_ptr<CompiledPlan> compiled, core::RunMode kind);

private:
    std::shared_ptr<const LoadedModel> m_model;
    py::object m_info;
};

class Plan {
public:
    Plan(std::shared_ptr<const CompiledPlan> plan, core::RunMode kind)
        : m_plan(std::move(plan))
        , m_kind(kind)
        , m_json(fromJson(core::planToJson(m_plan->plan, m_plan->model->graph)))
    {
    }
    py::object json() const { return m_json; }
    std::string mode() const { return core::toString(m_plan->plan.mode); }
    py::object regions() const { return m_json["regions"]; }
    py::object notes() const { return m_json["notes"]; }
    py::tuple fabric() const { return py::make_tuple(m_plan->plan.fabricWidth, m_plan->plan.fabricHeight); }
    std::string system() const { return m_plan->system.name; }

    py::object run(const std::optional<std::string>& mode, int maxSteps, std::optional<std::int64_t> batchSize,
        int users, std::optional<std::int64_t> promptTokens, const std::string& level, const py::kwargs& cycle) const
    {
        if (level == "cycle")
            return runOnFabric(mode, maxSteps, promptTokens, cycle);
        if (level != "model")
            raise(core::Diagnostic { "level", 0, 0, "level expects model or cycle, got '" + level + "'" });
        if (!cycle.empty())
            raise(core::Diagnostic { "level", 0, 0,
                "seed, threads, tokens, micro_batch_size, max_sequence_length, layers and "
                "learning_rate are for level=\"cycle\"" });
        core::engine::RunOptions options;
        options.mode = mode ? choice<core::RunMode>(*mode, "mode") : m_kind;
        if (maxSteps < 1 || maxSteps > 10000)
            raise(
                core::Diagnostic { "max_steps", 0, 0, "max_steps expects 1..10000, got " + std::to_string(maxSteps) });
        if (users < 1 || users > (1 << 16))
            raise(core::Diagnostic { "users", 0, 0, "users expects 1..65536, got " + std::to_string(users) });
        options.maxSteps = maxSteps;
        options.globalBatch = positive(batchSize, "batch_size", kMaxBatch);
        options.users = users;
        options.promptTokens = positive(promptTokens, "prompt_tokens", kMaxPromptTokens);
        core::study::StudySpec spec = studyOf(m_plan);
        spec.run = options;
        return makeRun(m_plan, options, std::move(runStudy(spec).ran));
    }

private:
    // level="cycle": the study at cycle level, as `run --level cycle --json` prints it.
    py::object runOnFabric(const std::optional<std::string>& mode, int maxSteps,
        std::optional<std::int64_t> promptTokens, const py::kwargs& cycle) const
    {
        core::study::StudySpec spec = studyOf(m_plan);
        spec.run.mode = mode ? choice<core::RunMode>(*mode, "mode") : m_kind;
        spec.level = core::study::StudyLevel::Cycle;
        const auto count = [&](const char* name, std::int64_t low, std::int64_t high, std::int64_t otherwise) {
            if (!cycle.contains(name))
                return otherwise;
            const auto value = cycle[name].cast<std::int64_t>();
            if (value < low || value > high)
                raise(core::Diagnostic { name, 0, 0,
                    std::string(name) + " expects " + std::to_string(low) + ".." + std::to_string(high) + ", got "
                        + std::to_string(value) });
            return value;
        };
        for (const auto& [key, value] : cycle) {
            (void)value;
            const std::string name = py::str(key);
            if (name != "seed" && name != "threads" && name != "tokens" && name != "micro_batch_size"
                && name != "max_sequence_length" && name != "layers" && name != "learning_rate")
                raise(core::Diagnostic { name, 0, 0, "run() got an unexpected argument '" + name + "'" });
        }
        spec.cycle.seed = std::uint64_t(count("seed", 0, std::int64_t(1) << 62, 1));
        spec.cycle.threads = int(count("threads", 1, 1024, 1));
        spec.cycle.tokens = int(count("tokens", 1, 4096, 1));
        spec.cycle.promptTokens = int(positive(promptTokens, "prompt_tokens", 4096));
        if (spec.cycle.promptTokens == 0)
            spec.cycle.promptTokens = 16;
        spec.cycle.microBatch = count("micro_batch_size", 1, 1'000'000, 0);
        spec.cycle.sequence = count("max_sequence_length", 1, 1'000'000, 0);
        spec.cycle.layers = int(count("layers", 1, 10'000, 0));
        spec.cycle.steps = maxSteps;
        if (cycle.contains("learning_rate")) {
            spec.cycle.learningRate = cycle["learning_rate"].cast<double>();
            if (!(spec.cycle.learningRate > 0.0) || !std::isfinite(spec.cycle.learningRate))
                raise(core::Diagnostic { "learning_rate", 0, 0, "learning_rate expects a number above 0" });
        }
        const core::study::StudyOutcome outcome = runStudy(spec);
        if (outcome.trainCycleLevel)
            return fromJson(core::cyclelevel::trainRunToJson(*outcome.trainCycleLevel));
        return fromJson(core::cyclelevel::cycleRunToJson(*outcome.cycleLevel));
    }

    // The study, Ctrl-C cancelling it; its error raised.
    static core::study::StudyOutcome runStudy(const core::study::StudySpec& spec)
    {
        std::atomic<bool> cancel { false };
        core::study::StudyControl control;
        control.cancelFlag = &cancel;
        core::Expected<core::study::StudyOutcome> outcome
            = interruptible([&] { return core::study::runStudy(spec, control); }, cancel);
        if (!outcome)
            raise(outcome.error());
        return std::move(outcome).value();
    }

    std::shared_ptr<const CompiledPlan> m_plan;
    core::RunMode m_kind;
    py::object m_json;
};

py::object Model::makePlan(std::shared_ptr<CompiledPlan> compiled, core::RunMode kind)
{
    return py::cast(Plan(std::move(compiled), kind));
}

} // namespace

const std::string& checkedText(const std::string& value, const char* argument)
{
    if (value.find('\0') != std::string::npos)
        raise(core::Diagnostic { argument, 0, 0,
            std::string(argument) + " holds a NUL character at offset " + std::to_string(value.find('\0'))
                + "; a path or a name cannot contain one" });
    return value;
}

[[noreturn]] void raise(const core::Diagnostic& diagnostic)
{
    if (diagnostic.kind == core::Diagnostic::Kind::Internal) { // a defect, not the user's input
        PyErr_SetString(PyExc_RuntimeError, diagnostic.format().c_str());
        throw py::error_already_set();
    }
    const py::module_ package = py::module_::import("waferscope");
    const char* type = diagnostic.kind == core::Diagnostic::Kind::CannotMap ? "MappingError" : "InputError";
    const py::object error
        = package.attr(type)(diagnostic.format(), diagnostic.file, diagnostic.line, diagnostic.column);
    PyErr_SetObject(error.get_type().ptr(), error.ptr());
    throw py::error_already_set();
}

core::study::StudySpec studyOf(const std::shared_ptr<const CompiledPlan>& plan)
{
    core::study::StudySpec spec;
    spec.model = plan->model;
    spec.system = plan->system;
    spec.compile = plan->options;
    spec.calibration = plan->calibration;
    spec.plan = std::shared_ptr<const core::ExecutionPlan>(plan, &plan->plan);
    return spec;
}

py::object fromJson(const std::string& text)
{
    return py::module_::import("json").attr("loads")(text);
}

} // namespace waferscope::python

using namespace waferscope::python;

PYBIND11_MODULE(_waferscope, module)
{
    module.doc() = "The compiled part of the waferscope package (see help(waferscope)).";
    module.attr("__version__") = kVersion;

    module.def(
        "hardware",
        [](const std::string& name) -> py::object {
            const py::list systems = fromJson(waferscope::core::hardwareToJson({ preset(name) }))["systems"];
            return systems[0];
        },
        py::arg("name"),
        "The hardware preset `name` (\"cs1\", \"cs2\" or \"cs3\") as a dict: the keys of one system of "
        "`waferscope-cli hardware --json` (wafer, I/O, MemoryX, SwarmX, and where each fact comes from).");

    module.def(
        "load",
        [](const std::string& path) {
            waferscope::core::Expected<waferscope::core::LoadedModelFile> file
                = waferscope::core::loadModelFile(checkedText(path, "path"));
            if (!file)
                raise(file.error());
            return Model(std::make_shared<const LoadedModel>(std::move(file).value()));
        },
        py::arg("path"),
        "Loads a Cerebras Model Zoo params YAML. Raises InputError, located, when the file cannot be read or "
        "is not a model WaferScope understands.");

    py::class_<Model>(module, "Model",
        "A loaded model: the keys of `waferscope-cli inspect --json` as attributes (name, family, total_params, "
        "layers, warnings) and in `info`.")
        .def_property_readonly("info", &Model::info, "Everything `inspect --json` prints, as a dict.")
        .def_property_readonly(
            "name", [](const Model& model) { return model.get("name"); }, "The config's model name.")
        .def_property_readonly(
            "family", [](const Model& model) { return model.get("family"); }, "The model family (gpt3, llama, ...).")
        .def_property_readonly(
            "total_params", [](const Model& model) { return model.get("total_params"); }, "Parameters in all.")
        .def_property_readonly(
            "layers", [](const Model& model) { return model.get("layers"); },
            "One dict per layer (op), as in `inspect --json`.")
        .def_property_readonly(
            "warnings", [](const Model& model) { return model.get("warnings"); }, "What the loader assumed or ignored.")
        .def_property_readonly(
            "path", [](const Model& model) { return model.loaded().path; }, "The params file as given.")
        .def("compile", &Model::compile, py::arg("system") = std::string(waferscope::core::defaultPresetName()),
            py::arg("num_csx") = 1, py::arg("mode") = "train", py::arg("execution") = "auto",
            py::arg("calibration") = py::none(),
            "Places the model on `num_csx` systems of `system` for `mode` (\"train\", \"eval\" or \"inference\"), "
            "with `execution` \"auto\", \"pipelined\" or \"weight_streaming\", under a software profile "
            "(`calibration`: a built-in name or a file; default the launch profile). Returns a Plan; raises "
            "MappingError when it cannot be placed.")
        .def("scale", &Model::scale, py::arg("system"), py::arg("num_csx"), py::arg("mode") = "train",
            py::arg("execution") = "auto", py::arg("batch_size") = py::none(), py::arg("calibration") = py::none(),
            "Runs the model on each system count of `num_csx` (ascending) and returns the points of "
            "`waferscope-cli scale --json`: dicts with num_csx, samples_per_s, speedup, efficiency, ...")
        .def("__repr__", [](const Model& model) {
            return "<waferscope.Model " + py::str(model.get("name")).cast<std::string>() + ", "
                + py::str(model.get("total_params")).cast<std::string>() + " parameters>";
        });

    py::class_<Plan>(module, "Plan", "A model placed on a system: what `waferscope-cli compile --json` prints.")
        .def_property_readonly("json", &Plan::json, "The whole plan as `compile --json` prints it.")
        .def_property_readonly("mode", &Plan::mode, "pipelined, weight_streaming or inference.")
        .def_property_readonly("regions", &Plan::regions, "One dict per placed region.")
        .def_property_readonly("fabric", &Plan::fabric, "The fabric's (width, height) in PEs.")
        .def_property_readonly("notes", &Plan::notes, "What the compiler decided and why.")
        .def_property_readonly("system", &Plan::system, "The hardware preset's name.")
        .def("run", &Plan::run, py::arg("mode") = py::none(), py::arg("max_steps") = 2,
            py::arg("batch_size") = py::none(), py::arg("users") = 1, py::arg("prompt_tokens") = py::none(),
            py::arg("level") = "model",
            "Runs the plan on the simulated cluster for `max_steps` steps (training: optimizer steps; "
            "inference: decode steps) and returns a Run. `mode` defaults to the one compiled for; "
            "`batch_size` is the global batch (training), `users` and `prompt_tokens` shape inference. "
            "level=\"cycle\" executes it on the cycle-level fabric instead and returns the dict "
            "`run --level cycle --json` prints: inference (with seed, threads, tokens, prompt_tokens) or "
            "training steps with weight streaming (max_steps steps, with seed, threads, micro_batch_size, "
            "max_sequence_length, layers, learning_rate).")
        .def("__repr__",
            [](const Plan& plan) { return "<waferscope.Plan " + plan.mode() + " on " + plan.system() + ">"; });

    bindRun(module);
    // The classes belong to the package, where users meet them (help(), repr of their types).
    for (const char* name : { "Model", "Plan", "Run", "Frame" })
        module.attr(name).attr("__module__") = "waferscope";
}
