# Fails when a C++ source of the project differs from what .clang-format makes of it.
file(GLOB_RECURSE sources ${ROOT}/core/*.h ${ROOT}/core/*.cpp ${ROOT}/ui/*.h ${ROOT}/ui/*.cpp
    ${ROOT}/app/*.h ${ROOT}/app/*.cpp ${ROOT}/tests/*.h ${ROOT}/tests/*.cpp)
execute_process(COMMAND ${CLANG_FORMAT} --dry-run --Werror ${sources} RESULT_VARIABLE result ERROR_VARIABLE errors)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "clang-format reports unformatted code (run clang-format -i):\n${errors}")
endif()
