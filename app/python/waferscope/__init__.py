"""WaferScope from Python: load a Cerebras Model Zoo params YAML, compile it for a wafer-scale
system, run it on the simulated cluster and look at the result, with the names of the
`waferscope-cli` commands.

    import waferscope
    model = waferscope.load("samples/gpt3_xl.yaml")
    plan = model.compile(system="cs2", num_csx=1, mode="train")
    run = plan.run(max_steps=2)
    run.metrics["samples_per_s"]           # the keys of `waferscope-cli run --json`
    run.timeline["end_s"].max()            # a NumPy structured array, one row per event
    frame = run.frame(0)                   # activity, sram (H, W) and traffic (H, W, 4)
    model.scale("cs2", [1, 2, 4, 8, 16])   # the points of `waferscope-cli scale --json`
    run.write_report("out/gpt3")           # report.json, report.html, trace.json, ...

Bad input raises InputError (with the file, line and column at fault); a job the system cannot
hold or run raises MappingError. Long calls release the GIL, and Ctrl-C cancels them.
"""

__all__ = [
    "InputError",
    "MappingError",
    "Model",
    "Plan",
    "Run",
    "Frame",
    "hardware",
    "load",
    "__version__",
]


class InputError(ValueError):
    """A file or an argument is wrong: `file`, `line` and `column` say where (0 when unknown)."""

    def __init__(self, message, file="", line=0, column=0):
        super().__init__(message)
        self.file = file
        self.line = line
        self.column = column


class MappingError(RuntimeError):
    """Valid input the system cannot hold or run (too large a model, options that cannot go
    together); `file` names the input or option that decided it."""

    def __init__(self, message, file="", line=0, column=0):
        super().__init__(message)
        self.file = file
        self.line = line
        self.column = column


from ._waferscope import Frame, Model, Plan, Run, __version__, hardware, load  # noqa: E402
