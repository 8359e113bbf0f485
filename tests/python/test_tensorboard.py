"""The TensorBoard event file of a run directory, decoded without WaferScope's code: the TFRecord
framing and its masked CRC-32C computed here, and the Event and Summary messages declared here
with the field numbers of TensorFlow's event.proto and summary.proto (which TensorBoard reads),
parsed by Python's google.protobuf. Every record's CRCs, every step and every scalar are checked
against report.json's steps[], and the steps against the run's own totals. Run by CTest with
WAFERSCOPE_CLI and WAFERSCOPE_SOURCE_DIR set."""

import json
import os
import re
import struct
import subprocess
import tempfile
import unittest

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

SOURCE = os.environ["WAFERSCOPE_SOURCE_DIR"]
CLI = os.environ["WAFERSCOPE_CLI"]
# The CLI carries its own sanitizer runtime in a sanitized tree; not the interpreter's.
NATIVE_ENV = {key: value for key, value in os.environ.items() if key != "LD_PRELOAD"}

EVENT_FILE = re.compile(r"^events\.out\.tfevents\.(\d+)\.([A-Za-z0-9._-]+)\.waferscope$")
UTILIZATION = ("compute", "fabric", "io", "memoryx", "swarmx")


def crc32c(data):
    """CRC-32C bit by bit (reflected Castagnoli polynomial 0x82F63B78)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked_crc(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def event_class():
    """TensorFlow's Event and Summary, with only the fields an event file of scalars uses."""
    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="tbcheck.proto", package="tbcheck", syntax="proto3")
    summary = proto.message_type.add(name="Summary")
    value = summary.nested_type.add(name="Value")
    value.field.add(name="tag", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    value.oneof_decl.add(name="value")
    value.field.add(name="simple_value", number=2, type=F.TYPE_FLOAT, label=F.LABEL_OPTIONAL, oneof_index=0)
    summary.field.add(name="value", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                      type_name=".tbcheck.Summary.Value")
    event = proto.message_type.add(name="Event")
    event.field.add(name="wall_time", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    event.field.add(name="step", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    event.oneof_decl.add(name="what")
    event.field.add(name="file_version", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, oneof_index=0)
    event.field.add(name="summary", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                    type_name=".tbcheck.Summary", oneof_index=0)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName("tbcheck.Event"))


Event = event_class()


def records(data):
    """The TFRecords of `data`, each CRC checked."""
    out = []
    at = 0
    while at < len(data):
        header = data[at:at + 12]
        if len(header) != 12:
            raise AssertionError(f"a truncated record header at byte {at}")
        (length,) = struct.unpack("<Q", header[:8])
        (length_crc,) = struct.unpack("<I", header[8:])
        if length_crc != masked_crc(header[:8]):
            raise AssertionError(f"the length CRC of the record at byte {at} is wrong")
        body = data[at + 12:at + 12 + length]
        footer = data[at + 12 + length:at + 16 + length]
        if len(body) != length or len(footer) != 4:
            raise AssertionError(f"a truncated record at byte {at}")
        if struct.unpack("<I", footer)[0] != masked_crc(body):
            raise AssertionError(f"the data CRC of the record at byte {at} is wrong")
        out.append(body)
        at += 16 + length
    return out


def decode(body):
    event = Event.FromString(body)
    # Nothing in the record that TensorFlow's messages would not read as these fields.
    strict = Event()
    strict.CopyFrom(event)
    strict.DiscardUnknownFields()
    if strict.SerializeToString() != body:
        raise AssertionError("a record holds fields the Event message does not declare")
    return event


def f32(value):
    return struct.unpack("<f", struct.pack("<f", value))[0]


def run_into(directory, *args):
    subprocess.run([CLI, "run", *args, "--model_dir", directory], check=True, capture_output=True, env=NATIVE_ENV)
    with open(os.path.join(directory, "report.json")) as file:
        return json.load(file)


def event_files(directory):
    return sorted(name for name in os.listdir(directory) if name.startswith("events.out.tfevents."))


class EventFile(unittest.TestCase):
    def check_directory(self, directory, report, rate):
        (name,) = [name for name in event_files(directory) if EVENT_FILE.match(name)]
        unix_time = int(EVENT_FILE.match(name).group(1))
        with open(os.path.join(directory, name), "rb") as file:
            bodies = records(file.read())
        steps = report["steps"]
        self.assertEqual(len(bodies), 1 + len(steps))
        first = decode(bodies[0])
        self.assertEqual(first.WhichOneof("what"), "file_version")
        self.assertEqual(first.file_version, "brain.Event:2")
        self.assertEqual(first.wall_time, unix_time)
        for body, step in zip(bodies[1:], steps):
            event = decode(body)
            self.assertEqual(event.WhichOneof("what"), "summary")
            self.assertEqual(event.step, step["step"])
            self.assertAlmostEqual(event.wall_time - unix_time, step["end_s"], delta=1e-6)
            scalars = {}
            for value in event.summary.value:
                self.assertEqual(value.WhichOneof("value"), "simple_value", value.tag)
                self.assertNotIn(value.tag, scalars)
                scalars[value.tag] = value.simple_value
            expected = {"step_time_s": step["step_time_s"], rate: step[rate], "mfu": step["mfu"]}
            for key in UTILIZATION:
                expected["utilization/" + key] = step["utilization"][key]
            self.assertEqual(set(scalars), set(expected))
            for tag, value in expected.items():
                self.assertEqual(scalars[tag], f32(value), tag)

    def check_steps_against_totals(self, report, rate):
        totals = report["totals"]
        steps = report["steps"]
        self.assertEqual([step["step"] for step in steps], list(range(1, len(steps) + 1)))
        self.assertEqual([step["step_time_s"] for step in steps], totals["step_times_s"])
        for before, after in zip(steps, steps[1:]):
            self.assertEqual(after["start_s"], before["end_s"])
        for step in steps:
            self.assertAlmostEqual(step["end_s"] - step["start_s"], step["step_time_s"], delta=1e-12)
            for key in UTILIZATION:
                self.assertGreaterEqual(step["utilization"][key], 0.0)
                self.assertLessEqual(step["utilization"][key], 1.0)
        # The last step is the steady one the totals describe.
        steady = steps[-1]
        self.assertAlmostEqual(steady["step_time_s"], totals["step_time_s"], delta=1e-12 * totals["step_time_s"])
        self.assertAlmostEqual(steady[rate], totals[rate], delta=1e-9 * totals[rate])
        self.assertAlmostEqual(steady["mfu"], totals["mfu"], delta=1e-9)

    def test_weight_streaming_training(self):
        with tempfile.TemporaryDirectory() as directory:
            report = run_into(directory, "--params", os.path.join(SOURCE, "samples", "gpt3_xl.yaml"),
                              "--system", "cs2", "--execution", "weight_streaming", "--max_steps", "3")
            self.assertEqual(report["plan"]["execution"], "weight_streaming")
            self.check_steps_against_totals(report, "samples_per_s")
            # The first step fills the stream: longer than the steady ones, at a lower rate.
            steps = report["steps"]
            self.assertGreater(steps[0]["step_time_s"], steps[-1]["step_time_s"])
            self.assertLess(steps[0]["samples_per_s"], steps[-1]["samples_per_s"])
            # MemoryX streams the weights in every step.
            self.assertGreater(steps[-1]["utilization"]["memoryx"], 0.0)
            self.check_directory(directory, report, "samples_per_s")

    def test_pipelined_training_on_four_systems(self):
        with tempfile.TemporaryDirectory() as directory:
            report = run_into(directory, "--params", os.path.join(SOURCE, "samples", "gpt2_small.yaml"),
                              "--system", "cs2", "--num_csx", "4", "--max_steps", "2")
            self.assertEqual(report["plan"]["execution"], "pipelined")
            self.check_steps_against_totals(report, "samples_per_s")
            # Without weight streaming, MemoryX is idle.
            self.assertEqual(report["steps"][-1]["utilization"]["memoryx"], 0.0)
            # Four systems reduce their gradients over SwarmX every step.
            self.assertGreater(report["steps"][-1]["utilization"]["swarmx"], 0.0)
            self.check_directory(directory, report, "samples_per_s")

    def test_inference(self):
        with tempfile.TemporaryDirectory() as directory:
            report = run_into(directory, "--params", os.path.join(SOURCE, "samples", "llama3_8b.yaml"),
                              "--system", "cs3", "--mode", "inference", "--users", "2", "--max_steps", "3")
            self.check_steps_against_totals(report, "tokens_per_s")
            # The decode steps follow the prompt.
            self.assertAlmostEqual(report["steps"][0]["start_s"], report["totals"]["time_to_first_token_s"],
                                   delta=1e-12)
            self.assertNotIn("samples_per_s", report["steps"][0])
            self.check_directory(directory, report, "tokens_per_s")

    def test_a_later_run_replaces_only_its_own_event_file(self):
        with tempfile.TemporaryDirectory() as directory:
            earlier = "events.out.tfevents.1000.oldhost.waferscope"
            foreign = "events.out.tfevents.1000.oldhost"  # another writer's, left alone
            leftover = "." + earlier + ".tmp123456"  # of a writer that was killed
            for name in (earlier, foreign, leftover):
                with open(os.path.join(directory, name), "wb") as file:
                    file.write(b"old")
            report = run_into(directory, "--params", os.path.join(SOURCE, "samples", "gpt3_xl.yaml"),
                              "--system", "cs2", "--max_steps", "2")
            names = event_files(directory)
            self.assertEqual(len(names), 2)
            self.assertIn(foreign, names)
            self.assertNotIn(earlier, names)
            self.assertFalse(os.path.exists(os.path.join(directory, leftover)))
            self.check_directory(directory, report, "samples_per_s")


if __name__ == "__main__":
    unittest.main()
