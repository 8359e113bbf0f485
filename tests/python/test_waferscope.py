"""The Python module against the CLI and core: the same metrics as `run --json`, the same
frames as core's FrameSource, located errors, and Ctrl-C. Run by CTest with the module's build
folder on PYTHONPATH and WAFERSCOPE_CLI, WAFERSCOPE_FRAMEDUMP and WAFERSCOPE_SOURCE_DIR set."""

import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

import numpy as np

import waferscope

SOURCE = os.environ["WAFERSCOPE_SOURCE_DIR"]
CLI = os.environ["WAFERSCOPE_CLI"]
FRAMEDUMP = os.environ["WAFERSCOPE_FRAMEDUMP"]


# The CLI and the frame dump carry their own sanitizer runtime (in a sanitized tree); the one
# preloaded for the interpreter must not reach them.
NATIVE_ENV = {key: value for key, value in os.environ.items() if key != "LD_PRELOAD"}


def sample(name):
    return os.path.join(SOURCE, "samples", name)


def cli_json(*args):
    done = subprocess.run([CLI, *args, "--json"], check=True, capture_output=True, text=True, env=NATIVE_ENV)
    return json.loads(done.stdout)


class Loading(unittest.TestCase):
    def test_a_model_has_what_inspect_prints(self):
        model = waferscope.load(sample("gpt3_xl.yaml"))
        inspected = cli_json("inspect", "--params", sample("gpt3_xl.yaml"))
        self.assertEqual(model.total_params, 1315723264)
        self.assertEqual(model.info, inspected)
        self.assertEqual(model.name, inspected["name"])
        self.assertEqual(model.family, inspected["family"])
        self.assertEqual(len(model.layers), len(inspected["layers"]))
        self.assertEqual(model.layers[0], inspected["layers"][0])

    def test_hardware_is_the_preset(self):
        listed = cli_json("hardware")["systems"]
        for system in listed:
            self.assertEqual(waferscope.hardware(system["name"]), system)


class Running(unittest.TestCase):
    def test_training_metrics_equal_the_cli(self):
        plan = waferscope.load(sample("gpt3_xl.yaml")).compile(system="cs2", num_csx=4, mode="train")
        run = plan.run(max_steps=2)
        expected = cli_json("run", "--params", sample("gpt3_xl.yaml"), "--system", "cs2", "--num_csx", "4",
                            "--max_steps", "2")
        self.assertEqual(run.metrics, expected)
        compiled = cli_json("compile", "--params", sample("gpt3_xl.yaml"), "--system", "cs2", "--num_csx", "4")
        for key in ("mode", "regions", "notes", "num_systems"):
            self.assertEqual(plan.json[key], compiled[key])
        self.assertEqual(plan.mode, compiled["mode"])

    def test_a_training_step_at_cycle_level_equals_the_cli(self):
        mlp = os.path.join(SOURCE, "tests", "data", "cyclelevel", "tiny_mlp.yaml")
        plan = waferscope.load(mlp).compile(system="cs2", mode="train", execution="weight_streaming")
        result = plan.run(level="cycle", max_steps=2, micro_batch_size=8, learning_rate=0.1)
        expected = cli_json("run", "--params", mlp, "--system", "cs2", "--execution", "weight_streaming",
                            "--mode", "train", "--level", "cycle", "--max_steps", "2", "--micro_batch_size", "8",
                            "--learning_rate", "0.1")
        for figures in (result, expected):
            del figures["wall_s"]
            for region in figures["regions"]:
                del region["wall_s"]
        self.assertEqual(result, expected)
        self.assertTrue(result["grads_match_reference"])
        with self.assertRaises(waferscope.InputError):
            plan.run(level="cycle", micro_batch_size=0)
        with self.assertRaises(waferscope.InputError):
            plan.run(level="fabric")

    def test_a_decoders_training_step_at_cycle_level_equals_the_cli(self):
        gpt2 = os.path.join(SOURCE, "tests", "data", "cyclelevel", "tiny_gpt2_tied.yaml")
        plan = waferscope.load(gpt2).compile(system="cs2", mode="train", execution="weight_streaming")
        result = plan.run(level="cycle", max_steps=1, micro_batch_size=2, max_sequence_length=8, layers=1)
        expected = cli_json("run", "--params", gpt2, "--system", "cs2", "--execution", "weight_streaming",
                            "--mode", "train", "--level", "cycle", "--micro_batch_size", "2",
                            "--max_sequence_length", "8", "--layers", "1")
        for figures in (result, expected):
            del figures["wall_s"]
            for region in figures["regions"]:
                del region["wall_s"]
        self.assertEqual(result, expected)
        self.assertEqual(result["tokens"], 16)
        self.assertTrue(result["loss_matches_reference"])

    def test_inference_metrics_equal_the_cli(self):
        plan = waferscope.load(sample("llama3_8b.yaml")).compile(system="cs3", mode="inference")
        run = plan.run(max_steps=2, users=2)
        expected = cli_json("run", "--params", sample("llama3_8b.yaml"), "--system", "cs3", "--mode", "inference",
                            "--max_steps", "2", "--users", "2")
        self.assertEqual(run.metrics, expected)

    def test_the_default_system_is_the_clis(self):
        planned = waferscope.load(sample("gpt3_xl.yaml")).compile().json
        compiled = cli_json("compile", "--params", sample("gpt3_xl.yaml"))
        for timed in (planned, compiled):
            del timed["compile_ms"]
        self.assertEqual(planned, compiled)

    def test_the_timeline_is_every_event(self):
        run = waferscope.load(sample("gpt3_xl.yaml")).compile(system="cs2").run(max_steps=2)
        timeline = run.timeline
        self.assertGreater(len(timeline), 0)
        self.assertTrue(np.all(timeline["end_s"] >= timeline["start_s"]))
        self.assertTrue(np.all((timeline["lane_index"] >= 0) & (timeline["lane_index"] < len(run.lanes))))
        self.assertEqual(set(timeline["iteration"]), {0, 1})
        self.assertIn("MemoryX", run.lanes)
        # The model FLOPs of a step are the timeline's FLOPs of that step, over the systems.
        flops = timeline["flops"][timeline["iteration"] == 1].sum()
        self.assertLess(abs(flops / run.metrics["hardware_flops_per_step"] - 1.0), 1e-5)

    def test_frames_equal_core_frame_source(self):
        plan = waferscope.load(sample("gpt3_xl.yaml")).compile(system="cs2", num_csx=1, mode="train")
        run = plan.run(max_steps=2)
        width, height = plan.fabric
        for step in (0, 5, len(run.steps) // 2):
            frame = run.frame(step)
            with tempfile.NamedTemporaryFile() as dump:
                subprocess.run([FRAMEDUMP, sample("gpt3_xl.yaml"), "cs2", "train", "1", "2", str(step), "0",
                                dump.name], check=True, env=NATIVE_ENV)
                with open(dump.name, "rb") as raw:
                    h, w, frames = (int(v) for v in raw.readline().split())
                    activity = np.frombuffer(raw.read(h * w * 4), dtype=np.float32).reshape(h, w)
                    links = np.frombuffer(raw.read(), dtype=np.float32).reshape(h, w, 4)
            self.assertEqual((h, w, frames), (height, width, len(run.steps)))
            self.assertEqual(frame.activity.dtype, np.float32)
            self.assertEqual(frame.activity.shape, (height, width))
            np.testing.assert_array_equal(frame.activity, activity)
            # The engine's order is north, south, east, west; the module's north, east, south, west.
            # (A weight-streaming GEMM loads its east and south links only, so this catches an
            # east/south mix-up; north and west are zero in both.)
            np.testing.assert_array_equal(frame.traffic, links[:, :, [0, 2, 1, 3]])
        self.assertTrue(any(run.frame(s).activity.max() > 0.0 for s in (5, len(run.steps) // 2)))

    def test_a_streamed_layer_fills_the_sram_of_its_region(self):
        plan = waferscope.load(sample("gpt3_xl.yaml")).compile(system="cs2", num_csx=1, mode="train")
        run = plan.run(max_steps=2)
        layers = run.metrics["layers"]
        step = next(i for i, s in enumerate(run.steps) if s["iteration"] == 1 and s["phase"] == "forward"
                    and layers[s["layer"]]["name"].endswith("ffn.up"))
        frame = run.frame(step)
        regions = [r for r in plan.regions if r["op"] == layers[frame.layer]["name"]]
        self.assertEqual(len(regions), 1)
        region = regions[0]
        expected = np.zeros(frame.sram.shape)
        expected[region["y"]:region["y"] + region["h"], region["x"]:region["x"] + region["w"]] = (
            region["sram_bytes_per_pe"] / plan.json["fabric"]["sram_bytes_per_pe_available"])
        np.testing.assert_allclose(frame.sram, expected, rtol=1e-6)
        self.assertGreater(frame.sram.max(), 0.0)

    def test_an_inference_plan_fills_its_sram_region_by_region(self):
        plan = waferscope.load(sample("llama3_8b.yaml")).compile(system="cs3", mode="inference")
        frame = plan.run().frame(0)
        capacity = plan.json["fabric"]["sram_bytes_per_pe_available"]
        expected = np.zeros(frame.sram.shape)
        for region in plan.regions:
            if region["system"] == 0:
                expected[region["y"]:region["y"] + region["h"], region["x"]:region["x"] + region["w"]] += (
                    region["sram_bytes_per_pe"] / capacity)
        np.testing.assert_allclose(frame.sram, expected, rtol=1e-6)

    def test_scale_gives_the_cli_points(self):
        model = waferscope.load(sample("gpt3_xl.yaml"))
        points = model.scale("cs2", [1, 2, 4])
        expected = cli_json("scale", "--params", sample("gpt3_xl.yaml"), "--system", "cs2", "--num_csx", "1,2,4")
        self.assertEqual(points, expected["points"])

    def test_a_report_is_the_cli_report(self):
        run = waferscope.load(sample("gpt3_xl.yaml")).compile(system="cs2").run(max_steps=1)
        with tempfile.TemporaryDirectory() as directory:
            run.write_report(os.path.join(directory, "py"))
            subprocess.run([CLI, "run", "--params", sample("gpt3_xl.yaml"), "--system", "cs2", "--num_csx", "1",
                            "--quiet", "--model_dir", os.path.join(directory, "cli")], check=True, env=NATIVE_ENV)
            with open(os.path.join(directory, "py", "report.json")) as mine, \
                    open(os.path.join(directory, "cli", "report.json")) as theirs:
                ours, cli = json.load(mine), json.load(theirs)
            for report in (ours, cli):
                report["manifest"].pop("created_utc")
            self.assertEqual(ours["totals"], cli["totals"])
            self.assertEqual(ours["layers"], cli["layers"])
            self.assertEqual(ours["sensitivity"], cli["sensitivity"])
            self.assertEqual(ours["steps"], cli["steps"])

            def files(name):
                # The event file is named for the second it was written in.
                return sorted(re.sub(r"^events\.out\.tfevents\.\d+\.", "events.out.tfevents.T.", file)
                              for file in os.listdir(os.path.join(directory, name)))
            self.assertEqual(files("py"), files("cli"))
            self.assertIn("events.out.tfevents.T." + re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())
                          + ".waferscope", files("py"))


    def test_a_report_into_a_directory_another_run_writes_is_refused(self):
        # The lock a writer of the directory holds (flock on .waferscope.lock, naming its pid): the
        # report is refused before its sensitivity sweep starts, and nothing is written.
        run = waferscope.load(sample("gpt3_xl.yaml")).compile(system="cs2").run(max_steps=1)
        with tempfile.TemporaryDirectory() as directory:
            with open(os.path.join(directory, ".waferscope.lock"), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                lock.write(f"{os.getpid()}\n")
                lock.flush()
                with self.assertRaises(waferscope.InputError) as caught:
                    run.write_report(directory)
                self.assertEqual(str(caught.exception), f"{directory}: error: another WaferScope run is writing "
                                 f"this directory (pid {os.getpid()}); wait for it or choose another directory")
                self.assertEqual(os.listdir(directory), [".waferscope.lock"])


class Errors(unittest.TestCase):
    def test_bad_input_is_located(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as bad:
            bad.write(textwrap.dedent("""\
                model:
                  hidden_size: 1024
                  num_heads: [oops
                """))
        try:
            with self.assertRaises(waferscope.InputError) as caught:
                waferscope.load(bad.name)
            self.assertEqual(caught.exception.file, bad.name)
            self.assertGreaterEqual(caught.exception.line, 3)
            self.assertGreater(caught.exception.column, 0)
            self.assertIn(bad.name, str(caught.exception))
        finally:
            os.unlink(bad.name)
        with self.assertRaises(waferscope.InputError) as caught:
            waferscope.load(sample("gpt3_xl.yaml")).compile(system="cs9")
        self.assertIn("cs9", str(caught.exception))
        with self.assertRaises(waferscope.InputError):
            waferscope.load(sample("gpt3_xl.yaml")).compile(mode="sing")

    def test_read_errors_and_special_files_are_input_errors(self):
        # An I/O error while reading (EIO from /proc/self/mem's unmapped first page) and a FIFO no
        # one writes to are the user's input, located at the file: InputError, never RuntimeError,
        # and the FIFO never blocks the call.
        with self.assertRaises(waferscope.InputError) as caught:
            waferscope.load("/proc/self/mem")
        self.assertEqual((caught.exception.file, caught.exception.line, caught.exception.column),
                         ("/proc/self/mem", 1, 1))
        self.assertIn("input/output error", str(caught.exception))
        with tempfile.TemporaryDirectory() as directory:
            fifo = os.path.join(directory, "pipe.yaml")
            os.mkfifo(fifo)
            with self.assertRaises(waferscope.InputError) as caught:
                waferscope.load(fifo)
            self.assertEqual(str(caught.exception),
                             f"{fifo}:1:1: error: is a FIFO (named pipe), expected a Model Zoo params YAML file")

    def test_meaningless_arguments_name_themselves(self):
        model = waferscope.load(sample("gpt2_small.yaml"))

        def refused(argument, call, *words):
            with self.assertRaises(waferscope.InputError) as caught:
                call()
            self.assertEqual(caught.exception.file, argument)
            self.assertEqual((caught.exception.line, caught.exception.column), (0, 0))
            for word in words:
                self.assertIn(word, str(caught.exception))

        plan = model.compile(system="cs2", num_csx=1, mode="train")
        # Counts of samples, steps, users and prompt tokens start at 1: 0 or less used to be taken
        # as "the config's" (batch_size, prompt_tokens) and run.
        for bad in (0, -8):
            refused("batch_size", lambda: plan.run(batch_size=bad), "batch_size expects an integer 1..", str(bad))
            refused("batch_size", lambda: model.scale("cs2", [1, 2], batch_size=bad), "batch_size", str(bad))
            refused("prompt_tokens", lambda: plan.run(mode="inference", prompt_tokens=bad), "prompt_tokens", str(bad))
            refused("max_steps", lambda: plan.run(max_steps=bad), "max_steps", str(bad))
            refused("users", lambda: plan.run(mode="inference", users=bad), "users", str(bad))
            refused("num_csx", lambda: model.compile(system="cs2", num_csx=bad), "num_csx", str(bad))
            refused("num_csx", lambda: model.scale("cs2", [1, bad]), "num_csx", str(bad))
        # CS-1 has no SwarmX: one system only; SwarmX joins at most 192 CS-2 and 2,048 CS-3.
        refused("num_csx", lambda: model.compile(system="cs1", num_csx=192), "expects 1 for CS-1", "no SwarmX")
        refused("num_csx", lambda: model.compile(system="cs2", num_csx=193), "1..192 for CS-2")
        refused("num_csx", lambda: model.compile(system="cs3", num_csx=2049), "1..2048 for CS-3")
        refused("num_csx", lambda: model.scale("cs1", [1, 2]), "expects 1 for CS-1")
        refused("num_csx", lambda: model.scale("cs2", []), "empty")
        refused("num_csx", lambda: model.compile(system="cs3", num_csx=4, mode="inference"),
                "inference places the model")
        # A NUL in a string would end it early in C++: another file, or another name.
        refused("path", lambda: waferscope.load(sample("gpt2_small.yaml") + "\0.bak"), "NUL")
        refused("system", lambda: model.compile(system="cs2\0"), "NUL")
        refused("calibration", lambda: model.compile(calibration="2024-11\0x"), "NUL")
        run = plan.run()
        with tempfile.TemporaryDirectory() as directory:
            refused("model_dir", lambda: run.write_report(os.path.join(directory, "out\0side")), "NUL")
            self.assertEqual(os.listdir(directory), [])
            # "" would write into the working directory.
            here = os.getcwd()
            os.chdir(directory)
            try:
                refused("model_dir", lambda: run.write_report(""), "model_dir expects a directory")
                self.assertEqual(os.listdir(directory), [])
            finally:
                os.chdir(here)

    def test_a_job_that_cannot_be_placed_is_a_mapping_error(self):
        model = waferscope.load(sample("llama3p1_405b.yaml"))
        with self.assertRaises(waferscope.MappingError) as caught:
            model.compile(system="cs2", mode="train", execution="pipelined")
        self.assertIn("cannot map", str(caught.exception))
        self.assertIsInstance(caught.exception, RuntimeError)


def interrupted(setup, call, timeout):
    """Runs `setup`, then `call`, in a child interpreter; sends it Ctrl-C half a second into
    `call` and returns what it printed: "cancelled after S s" or "finished"."""
    script = textwrap.dedent(f"""\
        import signal, time, waferscope
        signal.signal(signal.SIGINT, signal.default_int_handler)  # even if the test runner ignores it
        {setup}
        print("ready", flush=True)
        start = time.time()
        try:
            {call}
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("cancelled after %.1f s" % (time.time() - start), flush=True)
        """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=os.environ)
    if child.stdout.readline().strip() != "ready":
        child.kill()
        raise AssertionError("the child did not get ready")
    time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=timeout)
    return out


class Interrupting(unittest.TestCase):
    def test_ctrl_c_cancels_a_sweep(self):
        out = interrupted(f"model = waferscope.load({sample('llama3p1_405b.yaml')!r})",
                          'model.scale("cs3", list(range(1, 257, 4)))', timeout=120)
        self.assertTrue(out.startswith("cancelled"), out)
        # The sweep takes seconds; a cancel is heard between two of its runs.
        self.assertLess(float(out.split()[2]), 3.0)

    def test_ctrl_c_while_writing_a_report_leaves_nothing_behind(self):
        # 405B trained on one CS-3: the report's sensitivity sweep runs the model dozens of times
        # (tens of seconds); Ctrl-C half a second in stops it and nothing is written.
        with tempfile.TemporaryDirectory() as directory:
            target = os.path.join(directory, "report")
            out = interrupted(
                f"run = waferscope.load({sample('llama3p1_405b.yaml')!r}).compile(system='cs3').run(max_steps=1)",
                f"run.write_report({target!r})", timeout=600)
            self.assertTrue(out.startswith("cancelled"), out)
            self.assertFalse(os.path.exists(target) and os.listdir(target))


if __name__ == "__main__":
    unittest.main()
