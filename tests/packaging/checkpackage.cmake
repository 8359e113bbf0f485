# Installs the build into a temporary prefix and runs the installed CLI there, then builds the
# Debian package, checks its file list and Depends, unpacks it into a temporary root and runs the
# CLI from that root. Nothing it runs can see the source tree's resources or samples by path.
# -DBUILD_DIR=... -DWORK_DIR=... (emptied first) -DCPACK=... -DGUI=ON|OFF -DVERSION=x.y.z
cmake_minimum_required(VERSION 3.25)

foreach(var BUILD_DIR WORK_DIR CPACK GUI VERSION)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "checkpackage: -D${var}=... is required")
    endif()
endforeach()
# A DESTDIR from the caller's environment would move the install out of the prefix checked here.
unset(ENV{DESTDIR})
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# Runs a command in WORK_DIR; fails with its output unless it exits 0. Output in OUT_VAR.
function(run_ok OUT_VAR)
    execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE code OUTPUT_VARIABLE out
        ERROR_VARIABLE err)
    if(NOT code EQUAL 0)
        string(REPLACE ";" " " shown "${ARGN}")
        message(FATAL_ERROR "checkpackage: `${shown}` exited ${code}\n${out}\n${err}")
    endif()
    set(${OUT_VAR} "${out}" PARENT_SCOPE)
endfunction()

function(expect_in TEXT NEEDLE WHAT)
    string(FIND "${TEXT}" "${NEEDLE}" at)
    if(at EQUAL -1)
        message(FATAL_ERROR "checkpackage: ${WHAT}: '${NEEDLE}' not found in:\n${TEXT}")
    endif()
endfunction()

# The CLI of an installed tree (prefix or unpacked package) knows every preset, loads the
# installed copy of one and runs an installed sample.
function(check_installed_cli ROOT)
    set(cli ${ROOT}/bin/waferscope-cli)
    run_ok(hardware ${cli} hardware)
    foreach(system CS-1 CS-2 CS-3)
        expect_in("${hardware}" "${system}" "${cli} hardware")
    endforeach()
    # WSE-2's fabric is 757 PEs wide (resources/hardware/cs2.json, SDK fabric dimensions).
    run_ok(preset ${cli} hardware --preset ${ROOT}/share/waferscope/hardware/cs2.json --json)
    if(NOT preset MATCHES "\"fabric_width\": *757[,\n ]")
        message(FATAL_ERROR "checkpackage: ${cli} hardware --preset (installed cs2.json): no fabric_width 757:\n${preset}")
    endif()
    # The sample trains batches of 256 sequences of 1024 tokens: 262,144 tokens per step.
    run_ok(run ${cli} run --params ${ROOT}/share/waferscope/samples/gpt2_small.yaml --max_steps 1 --json)
    if(NOT run MATCHES "\"tokens_per_step\":262144(\\.0)?[,}]" OR NOT run MATCHES "\"samples_per_s\":[1-9]")
        message(FATAL_ERROR "checkpackage: ${cli} run (installed gpt2_small.yaml): not 262144 tokens per step:\n${run}")
    endif()
endfunction()

# The Python module of an installed tree imports with Debian's interpreter and loads a sample:
# GPT-3 XL has 1,315,723,264 parameters. In a sanitized build the module needs the sanitizer
# runtime preloaded (PRELOAD).
function(check_installed_python ROOT)
    set(environment PYTHONPATH=${ROOT}/lib/python3/dist-packages)
    if(PRELOAD)
        list(APPEND environment LD_PRELOAD=${PRELOAD} ASAN_OPTIONS=detect_leaks=0)
    endif()
    run_ok(python ${CMAKE_COMMAND} -E env ${environment} /usr/bin/python3 -c
        "import waferscope\nprint(waferscope.__file__)\nprint(waferscope.load('${ROOT}/share/waferscope/samples/gpt3_xl.yaml').total_params)")
    expect_in("${python}" "${ROOT}/lib/python3/dist-packages/waferscope/__init__.py" "import waferscope from ${ROOT}")
    expect_in("${python}" "1315723264" "waferscope.load (installed gpt3_xl.yaml)")
endfunction()

# The files every install has, relative to the prefix.
set(app_id io.github.waferscope.WaferScope)
set(required
    bin/waferscope-cli
    share/applications/${app_id}.desktop
    share/metainfo/${app_id}.metainfo.xml
    share/icons/hicolor/scalable/apps/${app_id}.svg
    share/waferscope/hardware/cs1.json
    share/waferscope/hardware/cs2.json
    share/waferscope/hardware/cs3.json
    share/waferscope/calibration/engine.json
    share/waferscope/samples/gpt2_small.yaml
    share/waferscope/samples/gpt3_xl.yaml
    share/waferscope/notebooks/explore_wafer.ipynb
    lib/python3/dist-packages/waferscope/__init__.py
    lib/python3/dist-packages/waferscope/_waferscope.cpython-311-x86_64-linux-gnu.so)
foreach(size 16 24 32 48 64 128 256)
    list(APPEND required share/icons/hicolor/${size}x${size}/apps/${app_id}.png)
endforeach()
if(GUI)
    list(APPEND required bin/waferscope)
endif()

# (a) cmake --install into a prefix.
set(prefix ${WORK_DIR}/prefix)
run_ok(ignored ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(path IN LISTS required)
    if(NOT EXISTS ${prefix}/${path})
        message(FATAL_ERROR "checkpackage: cmake --install did not install ${path}")
    endif()
endforeach()
if(NOT GUI AND EXISTS ${prefix}/bin/waferscope)
    message(FATAL_ERROR "checkpackage: bin/waferscope installed by a build without the GUI")
endif()
check_installed_cli(${prefix})
check_installed_python(${prefix})

# (c) The desktop entry and the metainfo as installed, where the validators are installed.
find_program(DESKTOP_FILE_VALIDATE desktop-file-validate)
if(DESKTOP_FILE_VALIDATE)
    run_ok(desktop_report ${DESKTOP_FILE_VALIDATE} ${prefix}/share/applications/${app_id}.desktop)
    message(STATUS "desktop-file-validate: no errors ${desktop_report}")
else()
    message(STATUS "desktop-file-validate not found (desktop-file-utils): desktop entry not validated")
endif()
find_program(APPSTREAMCLI appstreamcli)
if(APPSTREAMCLI)
    run_ok(appstream_report ${APPSTREAMCLI} validate --no-net ${prefix}/share/metainfo/${app_id}.metainfo.xml)
    string(STRIP "${appstream_report}" appstream_report)
    message(STATUS "appstreamcli validate: ${appstream_report}")
else()
    message(STATUS "appstreamcli not found (appstream): metainfo not validated")
endif()

# (b) The Debian package, written under WORK_DIR rather than into the build directory.
find_program(DPKG_DEB dpkg-deb)
find_program(DPKG_SHLIBDEPS dpkg-shlibdeps)
if(NOT DPKG_DEB OR NOT DPKG_SHLIBDEPS)
    message(FATAL_ERROR "checkpackage: dpkg-deb and dpkg-shlibdeps are needed: apt install dpkg-dev "
                        "(packaging/install-deps.sh installs it)")
endif()
run_ok(ignored ${CPACK} -G DEB --config ${BUILD_DIR}/CPackConfig.cmake -B ${WORK_DIR}/cpack)
file(GLOB debs ${WORK_DIR}/cpack/*.deb)
list(LENGTH debs deb_count)
if(NOT deb_count EQUAL 1)
    message(FATAL_ERROR "checkpackage: expected one .deb in ${WORK_DIR}/cpack, found: ${debs}")
endif()
get_filename_component(deb_name ${debs} NAME)
if(NOT deb_name MATCHES "^waferscope_${VERSION}_[a-z0-9]+\\.deb$")
    message(FATAL_ERROR "checkpackage: package file ${deb_name} is not waferscope_${VERSION}_ARCH.deb")
endif()

run_ok(listing ${DPKG_DEB} -c ${debs})
foreach(path IN LISTS required)
    expect_in("${listing}" " ./usr/${path}\n" "dpkg-deb -c ${deb_name}")
endforeach()
string(FIND "${listing}" " ./usr/bin/waferscope\n" gui_at)
if(NOT GUI AND NOT gui_at EQUAL -1)
    message(FATAL_ERROR "checkpackage: ${deb_name} holds bin/waferscope, built without the GUI")
endif()

run_ok(depends ${DPKG_DEB} -f ${debs} Depends)
# libc6 comes only from dpkg-shlibdeps reading the binaries; nothing lists it by hand.
if(NOT depends MATCHES "(^|, )libc6( |,|$)")
    message(FATAL_ERROR "checkpackage: Depends of ${deb_name} has no libc6 (dpkg-shlibdeps did not run): ${depends}")
endif()
foreach(dependency "python3 (>= 3.11)" "python3-numpy")
    expect_in("${depends}" "${dependency}" "Depends of ${deb_name}")
endforeach()
run_ok(fields ${DPKG_DEB} -f ${debs} Package Version Section)
expect_in("${fields}" "Package: waferscope\n" "dpkg-deb -f ${deb_name}")
expect_in("${fields}" "Version: ${VERSION}\n" "dpkg-deb -f ${deb_name}")
expect_in("${fields}" "Section: science\n" "dpkg-deb -f ${deb_name}")

set(root ${WORK_DIR}/root)
run_ok(ignored ${DPKG_DEB} -x ${debs} ${root})
check_installed_cli(${root}/usr)
check_installed_python(${root}/usr)
message(STATUS "checkpackage: ${deb_name}\nDepends: ${depends}")
