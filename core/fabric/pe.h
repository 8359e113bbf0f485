#pragma once

#include "core/fabric/wavelet.h"

#include <cstdint>
#include <vector>

namespace waferscope::core::fabric {

constexpr std::uint8_t kNoColor = 0xff;
constexpr std::uint16_t kRowMarker = 0xffff; // streamed-weight wavelet that ends an output row

// What a data task does with each wavelet that arrives on its color (the SDK's data tasks).
enum class TaskKind : std::uint8_t {
    None,
    Store, // vector[k] = w                                        (broadcast receive)
    AddForward, // s = vector[k] + w; send s on outColor, or keep it   (chain reduction)
    FmacColumn, // vector[0..n) += A[:, k] * w, A stored FP16 column-major (GEMV)
    FmacStream, // w = (fp16 weight, column j): out[row][0..t) += weight * act[j][0..t)  (weight streaming)
    MaxForward, // m = max(vector[k], w); send m on outColor, or keep it            (max reduction)
    Relay, // send w on outColor unchanged                                   (a path through the PE)
};

// The 16-bit format a PE's FP16 array holds: IEEE binary16 or bfloat16.
enum class Format16 : std::uint8_t { Fp16, Bf16 };

// A local task that a data task activates when it has consumed all the wavelets it expects.
enum class ActionKind : std::uint8_t { None, StartSend, Unblock };

struct DataTask {
    TaskKind kind = TaskKind::None;
    bool blocked = false; // a blocked task leaves its wavelets queued in the router
    bool result = false; // completing it produces part of the kernel's output
    std::uint8_t outColor = kNoColor;
    ActionKind then = ActionKind::None;
    std::uint8_t thenColor = kNoColor;
    std::uint32_t received = 0; // wavelets consumed so far
    std::uint32_t expected = 0; // wavelets (FmacStream: row markers) that complete the task
    std::uint32_t vector = 0; // FP32 offset: accumulator or store target
    std::uint32_t length = 0; // FP32 elements per operation (FmacStream: tokens per row)
    std::uint32_t matrix = 0; // FP16 offset: GEMV block or resident activations
    std::uint32_t row = 0; // FmacStream: current local output row
    // FmacColumn: of the wavelets that arrive, the ones numbered [skip, skip + use) multiply
    // columns 0..use of the block; the others are dropped at one cycle each. A set outColor
    // also sends every wavelet on (a multicast turned onto another color). Store likewise: it
    // keeps wavelets [skip, skip + use) at vector[0..use) and drops the others.
    std::uint32_t skip = 0;
    std::uint32_t use = 0xffffffffu;
    Format16 format = Format16::Fp16; // of the matrix (FmacColumn, FmacStream)
    bool done = false; // has received everything it expects since it was armed
};

// An asynchronous send of an FP32 vector from local memory onto a color, one wavelet per cycle.
struct SendStream {
    std::uint8_t color = kNoColor;
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
    std::uint32_t next = 0;
    bool active() const { return color != kNoColor && next < length; }
};

struct PeState;
struct Step;
// A compute step's work on the PE's own SRAM (real arithmetic); it may read and write nothing else.
using ComputeFn = void (*)(PeState& pe, const Step& step);

// One step of a PE's program: the sequential part of a kernel, what the SDK's main task and the
// local tasks it activates do in order. Control steps take no engine time (up to
// kControlStepsPerCycle run in one cycle); Compute occupies the engine for `cycles`, during which
// the ramp delivers nothing to the PE's data tasks. The program and the data tasks share the one
// engine: no step starts while a compute step or a data task holds it.
enum class StepKind : std::uint8_t {
    Arm, // bind tasks[color] = armed[a] (its counters reset); data tasks then run as wavelets arrive
    Await, // wait until tasks[color] has received everything it expects
    Send, // start the asynchronous send of f32[a .. a + b) on color, once the previous send has finished
    AwaitSend, // wait until the send has put its last wavelet into the router
    Compute, // fn(pe, step) on the engine for `cycles`
    Mark, // marks[a] = the current cycle (when a phase of the kernel finished)
    ComputeIf, // as Compute if the PE's select flag is set; nothing (no cycles) otherwise
};
struct Step {
    StepKind kind = StepKind::Compute;
    std::uint8_t color = 0xff;
    std::uint32_t a = 0;
    std::uint32_t b = 0;
    std::uint32_t c = 0;
    std::uint32_t d = 0;
    std::uint32_t cycles = 0;
    float scalar = 0.0f;
    ComputeFn fn = nullptr;
};
constexpr int kControlStepsPerCycle = 8;

// One PE's compute engine: its SRAM contents (FP32 and FP16 arrays; their bytes are accounted
// against the 48 KiB of the preset), its data tasks by color, and busy/work counters.
struct PeState {
    std::vector<DataTask> tasks; // indexed by color
    std::vector<float> f32;
    std::vector<std::uint16_t> f16;
    SendStream send;
    SendStream deferredSend; // started by a task's StartSend action, on the action's color
    std::uint64_t busyUntil = 0; // the engine accepts the next wavelet at this cycle
    std::uint64_t busyCycles = 0;
    std::uint64_t fmacs = 0;
    std::int64_t doneAt = -1; // cycle at which its last result task finished
    int pendingResults = 0;
    std::vector<Step> program; // run in order from pc; empty for kernels made of data tasks only
    std::uint32_t pc = 0;
    bool programWaiting = false; // the program waits for a wavelet (set by the router's step)
    bool select = false; // a data-dependent choice a compute step made, for ComputeIf
    std::vector<DataTask> armed; // the tasks Arm steps bind
    std::vector<std::uint64_t> marks; // Mark steps' cycles
    bool programDone() const { return pc >= program.size(); }

    std::int64_t sramBytes() const { return std::int64_t(f32.size()) * 4 + std::int64_t(f16.size()) * 2; }
    std::uint32_t allocF32(std::size_t count, float value = 0.0f);
    std::uint32_t allocF16(std::size_t count);
};

// Cycles one wavelet costs the engine, from the preset's FP16 SIMD width.
std::uint64_t taskCost(const DataTask& task, std::uint32_t payload, int simdWidth);

// True if the task takes a wavelet now: bound, not blocked, not complete.
bool taskReady(const DataTask& task);

// Runs the task for one wavelet (the router has checked that it may). Returns the wavelet the
// task emits on task.outColor, if any (valid() false otherwise).
Wavelet executeTask(PeState& pe, int color, std::uint32_t payload, std::uint64_t cycle, int simdWidth);

// Runs the PE's program from pc for this cycle, after the router has delivered to its tasks.
// Returns whether the PE has work left that does not wait for a wavelet (an engine busy past
// this cycle, a step it can run next cycle).
bool advanceProgram(PeState& pe, std::uint64_t cycle);

} // namespace waferscope::core::fabric
