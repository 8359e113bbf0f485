// waferscope-cli: the hardware contract and the exit codes, driven in-process and, for the
// exit status as a shell sees it, through the real binary.
#include "testing.h"

#include "clirunner.h"

#include <nlohmann/json.hpp>

#include <filesystem>

#include <cstdio>
#include <sstream>
#include <sys/wait.h>
#include <vector>

namespace {

using Result = waferscope::test::CliResult;

Result run(const std::vector<std::string>& args)
{
    return waferscope::test::runCliCaptured(args);
}

// Runs the installed-style binary through the shell; returns its exit status.
int shellExitStatus(const std::string& arguments)
{
    const std::string command = std::string(WAFERSCOPE_CLI_PATH) + " " + arguments + " >/dev/null 2>&1";
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

WS_TEST(hardwareJsonHoldsTheContractKeys)
{
    const Result result = run({ "hardware", "--json" });
    WS_REQUIRE(result.code == 0);
    WS_CHECK(result.err.empty());
    const nlohmann::json document = nlohmann::json::parse(result.out);
    const auto& systems = document.at("systems");
    WS_REQUIRE(systems.size() == 3);
    std::vector<std::string> names;
    for (const auto& system : systems)
        names.push_back(system.at("name"));
    WS_CHECK(names == (std::vector<std::string> { "cs1", "cs2", "cs3" }));

    const auto& cs2 = systems.at(1);
    const auto& wafer = cs2.at("wafer");
    WS_CHECK_EQ(wafer.at("name").get<std::string>(), std::string("WSE-2"));
    WS_CHECK_EQ(wafer.at("fabric_width").get<int>(), 757);
    WS_CHECK_EQ(wafer.at("fabric_height").get<int>(), 996);
    WS_CHECK_EQ(wafer.at("usable_width").get<int>(), 750);
    WS_CHECK_EQ(wafer.at("usable_height").get<int>(), 994);
    WS_CHECK_EQ(wafer.at("sram_per_pe_bytes").get<int>(), 49152);
    WS_CHECK_NEAR(wafer.at("clock_hz").get<double>(), 1.1e9, 1e-12);
    WS_CHECK_EQ(wafer.at("fmac_per_pe_per_cycle").get<int>(), 4);
    WS_CHECK_NEAR(cs2.at("io_bytes_per_s").get<double>(), 1.5e11, 1e-12);
    WS_CHECK(cs2.at("memoryx").is_object());
    WS_CHECK_EQ(cs2.at("swarmx").at("max_systems").get<int>(), 192);
    WS_CHECK_EQ(systems.at(2).at("swarmx").at("max_systems").get<int>(), 2048);
    WS_CHECK_EQ(systems.at(2).at("wafer").at("fabric_height").get<int>(), 1172);
    WS_CHECK(cs2.at("provenance").at("wafer.clock_hz").contains("source"));
}

WS_TEST(hardwareTableMarksAssumptions)
{
    const Result result = run({ "hardware" });
    WS_REQUIRE(result.code == 0);
    WS_CHECK_CONTAINS(result.out, "757 x 996");
    WS_CHECK_CONTAINS(result.out, "762 x 1172");
    WS_CHECK_CONTAINS(result.out, "* assumed");
}

WS_TEST(systemFilter)
{
    const Result result = run({ "hardware", "--json", "--system", "cs3" });
    WS_REQUIRE(result.code == 0);
    const nlohmann::json document = nlohmann::json::parse(result.out);
    WS_CHECK_EQ(document.at("systems").size(), std::size_t(1));
    WS_CHECK_EQ(run({ "hardware", "--system=cs9" }).code, 2);
}

WS_TEST(exitCodesFollowTheContract)
{
    WS_CHECK_EQ(run({}).code, 2);
    WS_CHECK_EQ(run({ "--help" }).code, 0);
    WS_CHECK_EQ(run({ "--version" }).code, 0);
    WS_CHECK_EQ(run({ "frobnicate" }).code, 2);
    WS_CHECK_EQ(run({ "hardware", "--help" }).code, 0);
    WS_CHECK_EQ(run({ "hardware", "--jsn" }).code, 2);
    WS_CHECK_EQ(run({ "hardware", "--system" }).code, 2);
    WS_CHECK_EQ(run({ "hardware", "--json", "--json" }).code, 2);
    WS_CHECK_EQ(run({ "hardware", "extra" }).code, 2);
}

WS_TEST(badPresetFileGivesALocatedError)
{
    const std::string path = waferscope::test::dataDir() + "/hardware/bad/negative_sram.json";
    const Result result = run({ "hardware", "--preset", path });
    WS_CHECK_EQ(result.code, 2);
    WS_CHECK(result.out.empty());
    // FILE:LINE:COL: error: ...
    WS_CHECK_CONTAINS(result.err, path + ":");
    WS_CHECK_CONTAINS(result.err, ": error: 'wafer.sram_per_pe_bytes' is -49152");
    WS_CHECK_EQ(run({ "hardware", "--preset", "/nonexistent.json" }).code, 2);
}

WS_TEST(goodPresetFileIsAccepted)
{
    const std::string path = waferscope::test::sourceDir() + "/resources/hardware/cs3.json";
    const Result result = run({ "hardware", "--json", "--preset", path });
    WS_REQUIRE(result.code == 0);
    WS_CHECK_EQ(
        nlohmann::json::parse(result.out).at("systems").at(0).at("name").get<std::string>(), std::string("cs3"));
}

WS_TEST(realBinaryExitStatus)
{
    WS_CHECK_EQ(shellExitStatus("hardware --json"), 0);
    WS_CHECK_EQ(shellExitStatus("no-such-command"), 2);
    WS_CHECK_EQ(
        shellExitStatus("hardware --preset " + waferscope::test::dataDir() + "/hardware/bad/truncated.json"), 2);
}

WS_TEST(inspectJsonHoldsTheContractKeys)
{
    const std::string path = waferscope::test::sourceDir() + "/samples/llama3_8b.yaml";
    const Result result = run({ "inspect", "--params", path, "--json" });
    WS_REQUIRE(result.code == 0);
    const nlohmann::json document = nlohmann::json::parse(result.out);
    for (const char* key : { "name", "family", "schema", "total_params", "nonzero_params", "num_layers", "hidden_size",
             "seq_len", "batch_size", "micro_batch_size", "precision", "flops_per_token_fwd", "layers", "warnings" })
        WS_CHECK(document.contains(key));
    WS_CHECK_EQ(document.at("family").get<std::string>(), std::string("llama"));
    WS_CHECK_EQ(document.at("schema").get<std::string>(), std::string("trainer"));
    // Llama 3 8B closed form: 2Vh + L(2h^2 + 2h*8*128 + 3hf + 2h) + h.
    const std::int64_t h = 4096, v = 128256, f = 14336, l = 32;
    WS_CHECK_EQ(document.at("total_params").get<std::int64_t>(),
        2 * v * h + l * (2 * h * h + 2 * h * 1024 + 3 * h * f + 2 * h) + h);
    WS_CHECK_EQ(document.at("num_layers").get<int>(), 32);
    WS_CHECK_EQ(document.at("seq_len").get<int>(), 8192);
    std::int64_t sum = 0;
    for (const auto& layer : document.at("layers")) {
        for (const char* key : { "name", "kind", "params", "fwd_flops_per_token", "weight_bytes" })
            WS_CHECK(layer.contains(key));
        sum += layer.at("params").get<std::int64_t>();
    }
    WS_CHECK_EQ(sum, document.at("total_params").get<std::int64_t>());
}

WS_TEST(inspectTableCollapsesIdenticalBlocks)
{
    const Result result = run({ "inspect", "--params", waferscope::test::sourceDir() + "/samples/gpt3_xl.yaml" });
    WS_REQUIRE(result.code == 0);
    WS_CHECK_CONTAINS(result.out, "1,315,723,264");
    WS_CHECK_CONTAINS(result.out, "decoder blocks 0-23 (24 identical blocks, per block):");
}

WS_TEST(inspectBadInputIsALocatedErrorWithExitTwo)
{
    const std::string path = waferscope::test::dataDir() + "/bad/legacy_num_heads_not_dividing_hidden.yaml";
    const Result result = run({ "inspect", "--params", path });
    WS_CHECK_EQ(result.code, 2);
    WS_CHECK(result.out.empty());
    WS_CHECK_EQ(result.err, path + ":15:16: error: num_heads must divide hidden_size (got 4096 and 30)\n");
    WS_CHECK_EQ(run({ "inspect" }).code, 2);
    WS_CHECK_EQ(run({ "inspect", "--params", waferscope::test::dataDir() + "/bad/a_directory.yaml" }).code, 2);
    WS_CHECK_EQ(shellExitStatus("inspect --params " + waferscope::test::dataDir() + "/bad/binary_garbage.yaml"), 2);
}

WS_TEST(fabricTrafficJsonHoldsTheContractKeys)
{
    const Result result = run({ "fabric", "--mesh", "16x8", "--traffic", "uniform", "--rate", "0.02", "--cycles",
        "2000", "--threads", "2", "--json" });
    WS_REQUIRE(result.code == 0);
    const nlohmann::json document = nlohmann::json::parse(result.out);
    for (const char* key : { "mesh", "cycles", "avg_hops", "avg_latency_cycles", "offered_rate", "accepted_rate",
             "router_cycles_per_s", "wall_s" })
        WS_CHECK(document.contains(key));
    WS_CHECK_EQ(document.at("mesh"), nlohmann::json({ 16, 8 }));
    WS_CHECK_EQ(document.at("cycles").get<int>(), 2000);
    // Mean XY distance on a 16 x 8 mesh: (16^2 - 1)/48 + (8^2 - 1)/24 = 7.9375.
    WS_CHECK_NEAR(document.at("avg_hops").get<double>(), 7.9375, 0.05);
    WS_CHECK_NEAR(document.at("theory").at("uniform_avg_hops").get<double>(), 7.9375, 1e-12);
}

WS_TEST(fabricKernelJsonHoldsTheContractKeys)
{
    const Result result
        = run({ "fabric", "--kernel", "gemv", "--matrix", "256x128", "--region", "8x4", "--system", "cs2", "--json" });
    WS_REQUIRE(result.code == 0);
    const nlohmann::json document = nlohmann::json::parse(result.out);
    for (const char* key : { "kernel", "cycles", "max_abs_error", "pe_busy_fraction", "link_wavelets", "wall_s" })
        WS_CHECK(document.contains(key));
    WS_CHECK_EQ(document.at("kernel").get<std::string>(), std::string("gemv"));
    WS_CHECK_EQ(document.at("simd_width").get<int>(), 4); // CS-2's FP16 SIMD width from the preset
    WS_CHECK_EQ(document.at("link_wavelets").get<int>(), 128 * 7 + 256 * 3);
    WS_CHECK(document.at("max_abs_error").get<double>() <= 1e-2);
    const Result sparse = run(
        { "fabric", "--kernel", "gemm_stream", "--matrix", "64x64", "--region", "4x4", "--sparsity", "0.5", "--json" });
    WS_REQUIRE(sparse.code == 0);
    WS_CHECK_EQ(nlohmann::json::parse(sparse.out).at("kernel").get<std::string>(), std::string("gemm_stream"));
}

WS_TEST(fabricErrorsUseTheExitCodes)
{
    const Result tooBig = run({ "fabric", "--kernel", "gemv", "--matrix", "4096x4096", "--region", "8x8" });
    WS_CHECK_EQ(tooBig.code, 3);
    WS_CHECK_CONTAINS(tooBig.err, "--region: error: does not fit");
    const Result badRate = run({ "fabric", "--rate", "1.5" });
    WS_CHECK_EQ(badRate.code, 2);
    WS_CHECK_CONTAINS(badRate.err, "--rate: error:");
    WS_CHECK_EQ(run({ "fabric", "--mesh", "32" }).code, 2);
    WS_CHECK_EQ(run({ "fabric", "--kernel", "fft" }).code, 2);
    WS_CHECK_EQ(run({ "fabric", "--traffic", "tornado" }).code, 2);
    WS_CHECK_EQ(shellExitStatus("fabric --kernel gemv --matrix 4096x4096 --region 8x8"), 3);
}

WS_TEST(runJsonHoldsTheContractKeys)
{
    const std::string samples = waferscope::test::sourceDir() + "/samples/";
    const Result train = run({ "run", "--params", samples + "gpt3_xl.yaml", "--system", "cs2", "--num_csx", "2",
        "--mode", "train", "--json" });
    WS_REQUIRE(train.code == 0);
    const nlohmann::json document = nlohmann::json::parse(train.out);
    for (const char* key : { "mode", "execution", "system", "num_csx", "num_systems", "step_time_s", "samples_per_s",
             "tokens_per_step", "tokens_per_s", "time_to_first_token_s", "mfu", "utilization", "bottleneck", "layers",
             "checkpoint_strategy", "checkpoint_every", "recompute_flops_per_step", "checkpoint_bytes_per_step" })
        WS_CHECK(document.contains(key));
    // GPT-3 XL's block outputs fit: all kept, each block's forward run once more in backward, nothing to MemoryX.
    WS_CHECK_EQ(document.at("checkpoint_strategy").get<std::string>(), std::string("all_blocks"));
    WS_CHECK_EQ(document.at("checkpoint_bytes_per_step").get<double>(), 0.0);
    WS_CHECK_NEAR(document.at("recompute_flops_per_step").get<double>(),
        document.at("hardware_flops_per_step").get<double>() - document.at("model_flops_per_step").get<double>(),
        1e-12);
    for (const char* key : { "compute", "fabric", "io", "memoryx", "swarmx" })
        WS_CHECK(document.at("utilization").contains(key));
    WS_REQUIRE(!document.at("layers").empty());
    for (const char* key : { "name", "time_s", "utilization", "bound" })
        WS_CHECK(document.at("layers").front().contains(key));
    WS_CHECK_EQ(document.at("execution").get<std::string>(), std::string("weight_streaming"));
    WS_CHECK_EQ(document.at("num_csx").get<int>(), 2);
    // Throughput is the global batch over the step: 512 samples of 2048 tokens.
    WS_CHECK_NEAR(document.at("samples_per_s").get<double>() * document.at("step_time_s").get<double>(), 512.0, 1e-9);
    WS_CHECK_NEAR(document.at("tokens_per_step").get<double>(), 512.0 * 2048.0, 1e-12);

    const Result inference
        = run({ "run", "--params", samples + "llama3_8b.yaml", "--system", "cs3", "--mode", "inference", "--json" });
    WS_REQUIRE(inference.code == 0);
    const nlohmann::json decode = nlohmann::json::parse(inference.out);
    WS_CHECK_EQ(decode.at("mode").get<std::string>(), std::string("inference"));
    WS_CHECK(decode.at("time_to_first_token_s").get<double>() > 0.0);
    WS_CHECK_NEAR(decode.at("tokens_per_s").get<double>() * decode.at("step_time_s").get<double>(), 1.0, 1e-9);
    WS_CHECK(decode.at("checkpoint_strategy").is_null());
}

WS_TEST(compileJsonSaysHowBackwardGetsItsActivations)
{
    const std::string path
        = waferscope::test::sharedDir() + "/modelzoo-release-2.10.0/nlp/llama/configs/params_llama3p1_8b_msl_128k.yaml";
    if (!std::filesystem::exists(path))
        WS_SKIP("Model Zoo 2.10.0 corpus not found");
    const Result compiled = run({ "compile", "--params", path, "--system", "cs3", "--json" });
    WS_REQUIRE(compiled.code == 0);
    const nlohmann::json plan = nlohmann::json::parse(compiled.out);
    for (const char* key :
        { "checkpoint_strategy", "checkpoint_every", "recompute_flops_per_step", "checkpoint_bytes_per_step" })
        WS_CHECK(plan.contains(key));
    const std::string strategy = plan.at("checkpoint_strategy").get<std::string>();
    WS_CHECK(strategy == "memoryx" || strategy == "every_k");
    // 128k tokens trained on one CS-3: a run of one step exits 0 and says the same.
    const Result trained = run({ "run", "--params", path, "--system", "cs3", "--max_steps", "1", "--json" });
    WS_REQUIRE(trained.code == 0);
    WS_CHECK_EQ(nlohmann::json::parse(trained.out).at("checkpoint_strategy").get<std::string>(), strategy);
}

WS_TEST(scaleJsonHoldsTheContractKeys)
{
    const std::string params = waferscope::test::sourceDir() + "/samples/gpt3_xl.yaml";
    const Result result = run({ "scale", "--params", params, "--system", "cs2", "--num_csx", "4,1,2", "--json" });
    WS_REQUIRE(result.code == 0);
    const nlohmann::json document = nlohmann::json::parse(result.out);
    WS_REQUIRE(document.at("points").size() == 3);
    for (const auto& point : document.at("points"))
        for (const char* key : { "num_csx", "samples_per_s", "speedup", "efficiency", "bottleneck" })
            WS_CHECK(point.contains(key));
    WS_CHECK_EQ(document.at("points").front().at("num_csx").get<int>(), 1);
    WS_CHECK_NEAR(document.at("points").front().at("speedup").get<double>(), 1.0, 1e-12);
    const auto& four = document.at("points").back();
    WS_CHECK_NEAR(four.at("efficiency").get<double>(), four.at("speedup").get<double>() / 4.0, 1e-12);
}

WS_TEST(runAndScaleErrorsUseTheExitCodes)
{
    const std::string samples = waferscope::test::sourceDir() + "/samples/";
    WS_CHECK_EQ(run({ "run", "--params", samples + "gpt3_xl.yaml", "--mode", "fly" }).code, 2);
    WS_CHECK_EQ(run({ "run", "--params", samples + "missing.yaml" }).code, 2);
    const Result tooMany
        = run({ "scale", "--params", samples + "gpt3_xl.yaml", "--system", "cs2", "--num_csx", "1,400" });
    WS_CHECK_EQ(tooMany.code, 2);
    WS_CHECK_CONTAINS(tooMany.err, "--num_csx: error:");
    WS_CHECK_EQ(run({ "scale", "--params", samples + "gpt3_xl.yaml", "--num_csx", "1,,2" }).code, 2);
    const Result cs1 = run({ "run", "--params", samples + "gpt3_xl.yaml", "--system", "cs1" });
    WS_CHECK_EQ(cs1.code, 3);
    WS_CHECK_EQ(shellExitStatus("run --params " + samples + "gpt3_xl.yaml --system cs1"), 3);
}
