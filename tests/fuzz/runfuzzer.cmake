# Runs one libFuzzer target for a fixed time from a fresh working corpus in the build tree, so
# that nothing is ever written into the source tree: the seeds are copied in first and the
# fuzzer gets only the copy. With SECONDS=0 it only replays each seed once (a quick regression
# check of every seed and every input a fuzzer once crashed on).
# TIMEOUT is the most seconds one input may take before libFuzzer calls it a hang (default 10).
#   cmake -DFUZZER=bin -DWORK_DIR=dir -DSEED_DIRS="a;b" -DSECONDS=60 [-DDICT=file] [-DTIMEOUT=s] -P runfuzzer.cmake
foreach(required FUZZER WORK_DIR SEED_DIRS SECONDS)
    if(NOT DEFINED ${required})
        message(FATAL_ERROR "runfuzzer.cmake: ${required} is not set")
    endif()
endforeach()

if(NOT DEFINED TIMEOUT)
    set(TIMEOUT 10)
endif()

# UBSan reports and carries on unless told otherwise: its first report must fail the run like a
# crash does. Options given by the caller come later and so take precedence.
set(ENV{UBSAN_OPTIONS} "halt_on_error=1:print_stacktrace=1:$ENV{UBSAN_OPTIONS}")

set(corpus ${WORK_DIR}/corpus)
set(artifacts ${WORK_DIR}/artifacts)
file(REMOVE_RECURSE ${corpus})
file(MAKE_DIRECTORY ${corpus} ${artifacts})

# Seeds are prefixed with their folder so that samples/x.yaml and tests/data/bad/x.yaml both land.
set(seeds 0)
foreach(dir IN LISTS SEED_DIRS)
    get_filename_component(prefix ${dir} NAME)
    file(GLOB_RECURSE files LIST_DIRECTORIES false ${dir}/*)
    foreach(file IN LISTS files)
        file(RELATIVE_PATH name ${dir} ${file})
        string(REPLACE "/" "_" name "${prefix}_${name}")
        file(COPY_FILE ${file} ${corpus}/${name})
        math(EXPR seeds "${seeds} + 1")
    endforeach()
endforeach()
if(seeds EQUAL 0)
    message(FATAL_ERROR "runfuzzer.cmake: no seed files in ${SEED_DIRS}")
endif()

if(SECONDS EQUAL 0)
    # Files (not folders) given to libFuzzer are run once each and nothing is written.
    file(GLOB corpusFiles ${corpus}/*)
    execute_process(COMMAND ${FUZZER} -timeout=${TIMEOUT} -rss_limit_mb=2048 -artifact_prefix=${artifacts}/ ${corpusFiles}
        RESULT_VARIABLE result)
    if(NOT result EQUAL 0)
        message(FATAL_ERROR "${FUZZER} failed (${result}) on a seed; see the output above")
    endif()
    return()
endif()

set(options -max_total_time=${SECONDS} -timeout=${TIMEOUT} -rss_limit_mb=2048 -print_final_stats=1
    -artifact_prefix=${artifacts}/)
if(DICT)
    list(APPEND options -dict=${DICT})
endif()
message(STATUS "${FUZZER} for ${SECONDS} s from ${seeds} seeds; crashes go to ${artifacts}")
execute_process(COMMAND ${FUZZER} ${options} ${corpus} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "${FUZZER} failed (${result}); the failing input is in ${artifacts}")
endif()
