# Fails when README.md or a docs/*.md names a repository file that does not exist, or links
# outside the repository, or when README.md has 600 lines or more (the README is for users; the
# rest goes to docs/).
#
# What is checked, outside fenced code blocks:
#   - relative Markdown links and images, [text](path) and ![alt](path), resolved from the
#     document's folder (web links and links to an anchor of the same page are not checked; a
#     link's #anchor is dropped);
#   - backquoted repository paths, `core/engine/engine.h`: a span without spaces whose first
#     component is a top-level folder of the repository, resolved from the repository root. A
#     path without an extension may name a .h/.cpp pair (`ui/reportpdf`); one {a,b,c} group is
#     expanded; spans with <, * or ... are patterns, not paths, and are skipped;
#   - a backquoted or linked path that starts with ../ leaves the repository: refused.
#
#   cmake -DROOT=<source dir> -P tests/docs/checkdocs.cmake

cmake_policy(VERSION 3.25)

if(NOT ROOT)
    message(FATAL_ERROR "usage: cmake -DROOT=<source dir> -P checkdocs.cmake")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)

set(max_readme_lines 600)
set(top_level_folders .ci app core docs packaging resources samples tests ui)

file(GLOB documents RELATIVE ${ROOT} ${ROOT}/docs/*.md)
list(SORT documents)
list(PREPEND documents README.md)

# Markdown is full of [, ], ; and \ which CMake's lists would read as brackets and separators:
# they are replaced by control characters while the text is split and restored for messages.
string(ASCII 1 open_bracket)
string(ASCII 2 close_bracket)
string(ASCII 3 semicolon)
string(ASCII 4 backslash)

set(problems)

# Whether `relative` (from the repository root, no leading ./) names a file or folder in it.
function(repository_path_exists relative out)
    set(found FALSE)
    if(EXISTS "${ROOT}/${relative}")
        set(found TRUE)
    elseif(NOT relative MATCHES "\\.[A-Za-z0-9]+/?$"
           AND (EXISTS "${ROOT}/${relative}.h" OR EXISTS "${ROOT}/${relative}.cpp"))
        set(found TRUE)
    endif()
    set(${out} ${found} PARENT_SCOPE)
endfunction()

# Problems with one backquoted span, appended to `problems` in the caller.
function(check_span document line_number span)
    if(span MATCHES "[ \t]" OR NOT span MATCHES "/")
        return()
    endif()
    if(span MATCHES "^\\.\\./")
        set(problems ${problems} "${document}:${line_number}: `${span}` is outside the repository" PARENT_SCOPE)
        return()
    endif()
    string(REGEX REPLACE "^\\./" "" span "${span}")
    string(REGEX MATCH "^[^/]+" first "${span}")
    if(NOT first IN_LIST top_level_folders)
        return()
    endif()
    if(span MATCHES "<|>|\\*|\\.\\.\\.")
        return()
    endif()
    set(candidates "${span}")
    if(span MATCHES "^([^{]*){([^}]*)}(.*)$")
        set(prefix "${CMAKE_MATCH_1}")
        set(suffix "${CMAKE_MATCH_3}")
        string(REPLACE "," ";" choices "${CMAKE_MATCH_2}")
        set(candidates)
        foreach(choice IN LISTS choices)
            list(APPEND candidates "${prefix}${choice}${suffix}")
        endforeach()
    endif()
    set(missing)
    foreach(candidate IN LISTS candidates)
        repository_path_exists("${candidate}" found)
        if(NOT found)
            list(APPEND missing "${candidate}")
        endif()
    endforeach()
    if(missing)
        string(REPLACE ";" ", " missing "${missing}")
        set(problems ${problems} "${document}:${line_number}: `${span}` names no file in the repository (${missing})"
            PARENT_SCOPE)
    endif()
endfunction()

# Problems with one link target, relative to the document's folder.
function(check_link document line_number target)
    string(REGEX REPLACE "[ \t]+\"[^\"]*\"$" "" target "${target}") # a title
    string(REGEX REPLACE "#.*$" "" target "${target}")
    if(target STREQUAL "" OR target MATCHES "^[A-Za-z][A-Za-z0-9+.-]*:")
        return()
    endif()
    get_filename_component(folder "${ROOT}/${document}" DIRECTORY)
    get_filename_component(resolved "${folder}/${target}" ABSOLUTE)
    string(LENGTH "${ROOT}/" root_length)
    string(SUBSTRING "${resolved}/" 0 ${root_length} head)
    if(NOT head STREQUAL "${ROOT}/")
        set(problems ${problems} "${document}:${line_number}: link (${target}) leaves the repository" PARENT_SCOPE)
    elseif(NOT EXISTS "${resolved}")
        set(problems ${problems} "${document}:${line_number}: link (${target}) names no file in the repository"
            PARENT_SCOPE)
    endif()
endfunction()

foreach(document IN LISTS documents)
    file(READ "${ROOT}/${document}" text)
    if(document STREQUAL "README.md")
        string(REGEX MATCHALL "\n" newlines "${text}")
        list(LENGTH newlines line_count)
        if(NOT line_count LESS max_readme_lines)
            list(APPEND problems
                "README.md: ${line_count} lines, keep it under ${max_readme_lines} (move detail into docs/)")
        endif()
    endif()
    string(REPLACE "\\" "${backslash}" text "${text}")
    string(REPLACE "[" "${open_bracket}" text "${text}")
    string(REPLACE "]" "${close_bracket}" text "${text}")
    string(REPLACE ";" "${semicolon}" text "${text}")
    string(REPLACE "\n" ";" lines "${text}")

    set(line_number 0)
    set(in_fence FALSE)
    set(pending "") # an inline code span still open at the end of the previous line
    foreach(line IN LISTS lines)
        math(EXPR line_number "${line_number} + 1")
        if(line MATCHES "^[ \t]*```")
            if(in_fence)
                set(in_fence FALSE)
            else()
                set(in_fence TRUE)
            endif()
            set(pending "")
            continue()
        endif()
        if(in_fence)
            continue()
        endif()
        if(line MATCHES "^[ \t]*$")
            set(pending "")
            continue()
        endif()
        # The line, with a code span left open on the line before in front of it. Brackets and
        # semicolons stay replaced: no path holds one.
        set(joined "${line}")
        if(NOT pending STREQUAL "")
            set(joined "${pending} ${line}")
        endif()

        # Links, outside code spans.
        string(REGEX REPLACE "`[^`]*`" "" outside_code "${joined}")
        string(REGEX REPLACE "`.*$" "" outside_code "${outside_code}")
        string(REGEX MATCHALL "${close_bracket}\\([^)]+\\)" links "${outside_code}")
        foreach(link IN LISTS links)
            string(REGEX REPLACE "^${close_bracket}\\((.*)\\)$" "\\1" target "${link}")
            check_link("${document}" ${line_number} "${target}")
        endforeach()

        # Code spans.
        string(REGEX MATCHALL "`[^`]*`" spans "${joined}")
        foreach(span IN LISTS spans)
            string(REGEX REPLACE "^`(.*)`$" "\\1" span "${span}")
            check_span("${document}" ${line_number} "${span}")
        endforeach()
        string(REGEX REPLACE "`[^`]*`" "" rest "${joined}")
        if(rest MATCHES "`(.*)$")
            set(pending "`${CMAKE_MATCH_1}")
        else()
            set(pending "")
        endif()
    endforeach()
endforeach()

if(problems)
    string(REPLACE "${open_bracket}" "[" problems "${problems}")
    string(REPLACE "${close_bracket}" "]" problems "${problems}")
    string(REPLACE "${backslash}" "\\" problems "${problems}")
    string(REPLACE ";" "\n  " report "${problems}")
    message(FATAL_ERROR "the documents name what is not in the repository:\n  ${report}")
endif()
list(LENGTH documents count)
message(STATUS "${count} documents name only files of the repository")
