#pragma once

// What the module's files share: the objects behind Model, Plan and Run, errors as the package's
// exceptions, JSON as Python objects, and long calls with the GIL released and Ctrl-C heard.
#include "core/common/diagnostic.h"
#include "core/compiler/compiler.h"
#include "core/engine/calibration.h"
#include "core/engine/engine.h"
#include "core/hardware/systemspec.h"
#include "core/model/modelgraph.h"
#include "core/model/modelloader.h"
#include "core/study/study.h"

#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

namespace waferscope::python {

namespace py = pybind11;

// A loaded params file (path, the bytes a report's manifest hashes, graph): what Model holds and
// every Plan and Run of it shares.
using LoadedModel = core::LoadedModelFile;

struct CompiledPlan {
    std::shared_ptr<const LoadedModel> model;
    core::SystemSpec system;
    core::CompileOptions options;
    core::engine::Calibration calibration;
    core::ExecutionPlan plan;
};

// Raises the package's InputError, or MappingError for a job that cannot be mapped.
[[noreturn]] void raise(const core::Diagnostic& diagnostic);

// A string argument handed on to C++ as is: a NUL inside it would end it early there (a path
// would name another file), so it raises InputError naming the argument instead.
const std::string& checkedText(const std::string& value, const char* argument);

// Parses JSON text into Python objects (dicts, lists, numbers, strings).
py::object fromJson(const std::string& text);

// Runs `work` on a thread of its own with the GIL released, listening for Ctrl-C meanwhile. On
// a signal it sets `cancel`, which the work asks, waits for the work to end and raises
// KeyboardInterrupt (or whatever the signal handler raised).
template <class Work>
auto interruptible(Work work, std::atomic<bool>& cancel) -> decltype(work())
{
    using Result = decltype(work());
    std::packaged_task<Result()> task(std::move(work));
    std::future<Result> done = task.get_future();
    std::thread worker;
    {
        py::gil_scoped_release release;
        worker = std::thread(std::move(task));
    }
    bool interrupted = false;
    for (;;) {
        {
            py::gil_scoped_release release;
            if (done.wait_for(std::chrono::milliseconds(20)) == std::future_status::ready)
                break;
        }
        if (!interrupted && PyErr_CheckSignals() != 0) {
            interrupted = true;
            cancel.store(true);
        }
    }
    {
        py::gil_scoped_release release;
        worker.join();
    }
    if (interrupted)
        throw py::error_already_set();
    return done.get();
}

// The Run and Frame classes (pyrun.cpp).
void bindRun(py::module_& module);
py::object makeRun(std::shared_ptr<const CompiledPlan> plan, core::engine::RunOptions options,
    std::shared_ptr<const core::engine::RunResult> result);

// The study of a compiled plan (core/study/study.h): its model, system, options and plan as given,
// so that the study starts at the run.
core::study::StudySpec studyOf(const std::shared_ptr<const CompiledPlan>& plan);

} // namespace waferscope::python
