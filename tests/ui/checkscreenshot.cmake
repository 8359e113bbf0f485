# Runs `waferscope --system cs2 --screenshot OUT` as a user would and checks a PNG of the window
# size was written (PNG signature and IHDR width/height); then the same with a model to place.
file(REMOVE ${OUT})
execute_process(COMMAND ${GUI} --system cs2 --num_csx 4 --screenshot ${OUT} RESULT_VARIABLE result
    ERROR_VARIABLE errors TIMEOUT 60)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "waferscope --screenshot exited with ${result}: ${errors}")
endif()
if(NOT EXISTS ${OUT})
    message(FATAL_ERROR "no screenshot written to ${OUT}")
endif()
file(READ ${OUT} header LIMIT 24 HEX)
string(SUBSTRING "${header}" 0 16 signature)
if(NOT signature STREQUAL "89504e470d0a1a0a")
    message(FATAL_ERROR "${OUT} is not a PNG (header ${header})")
endif()
string(SUBSTRING "${header}" 32 8 width_hex)
string(SUBSTRING "${header}" 40 8 height_hex)
math(EXPR width "0x${width_hex}")
math(EXPR height "0x${height_hex}")
if(NOT width EQUAL 1600 OR NOT height EQUAL 1000)
    message(FATAL_ERROR "screenshot is ${width} x ${height}, expected the 1600 x 1000 window")
endif()
# With a model: the window is saved once the model is loaded and compiled (four wafers of
# Llama 3.1 70B inference on CS-3); a run that never settles times out.
file(REMOVE ${OUT}.model.png)
execute_process(COMMAND ${GUI} ${SAMPLE} --system cs3 --mode inference --screenshot ${OUT}.model.png
    RESULT_VARIABLE model_result ERROR_VARIABLE model_errors TIMEOUT 60)
if(NOT model_result EQUAL 0 OR NOT EXISTS ${OUT}.model.png)
    message(FATAL_ERROR "waferscope ${SAMPLE} --screenshot exited with ${model_result}: ${model_errors}")
endif()
# Bad options exit with 2 and write nothing.
execute_process(COMMAND ${GUI} --system cs9 --screenshot ${OUT}.bad RESULT_VARIABLE bad_result
    OUTPUT_QUIET ERROR_QUIET TIMEOUT 60)
if(NOT bad_result EQUAL 2 OR EXISTS ${OUT}.bad)
    message(FATAL_ERROR "waferscope --system cs9 exited with ${bad_result}, expected 2 and no file")
endif()
message(STATUS "screenshot ${width} x ${height} written to ${OUT}")
