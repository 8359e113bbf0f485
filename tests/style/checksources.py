#!/usr/bin/env python3
"""Two rules of STYLE.md that a reader can check by eye but a build cannot:

* No function is longer than MAX_LINES lines, from its opening brace to its closing brace,
  unless the comment directly above its definition starts with `// Per-cycle loop:` and says
  why it stays whole.
* Every .cpp has a header of its own name beside it, or says why not in its first comment line,
  which then starts with `// No header of its own: `.

usage: checksources.py [--max-lines N] ROOT DIR...   (directories relative to ROOT)

Prints one line per finding, `path:line: name is N lines (most M)` or `path:1: no header ...`,
and exits 1 when there is any. The function scan is lexical, not a C++ parser: comments, string,
character and raw string literals and preprocessor lines are blanked first, then a brace opens
a function when the text before it ends in a parameter list (with its qualifiers, a trailing
return type or a constructor's initializer list) that is not an if, for, while, switch or catch.
A lambda or a local class inside a function counts as part of that function.
"""

import os
import re
import sys

MAX_LINES = 120
EXEMPTION = "// Per-cycle loop:"
NO_HEADER = "// No header of its own: "
SOURCE_SUFFIXES = (".cpp", ".h")


def blank(text):
    """`text` with comments, literals and preprocessor lines replaced by spaces (newlines kept),
    so that every brace left is code and every offset is where it was."""
    out = []
    i = 0
    n = len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a directive, with its continuation lines
            j = i
            while j < n and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                    continue
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        line_start = False
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif re.match(r'(?:u8|[uUL])?R"', text[i:i + 4]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'(?:u8|[uUL])?R"([^(\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum() and _in_number(text, i):
            out.append(c)  # a digit separator: 1'000'000
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n) if j < n and text[j] == c else min(j, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _in_number(text, i):
    """Whether the quote at `i` sits inside a numeric literal (a digit separator)."""
    j = i - 1
    while j >= 0 and (text[j].isalnum() or text[j] in "'."):
        j -= 1
    return text[j + 1].isdigit()


CONTROL = re.compile(r"(?:\b(?:if|for|while|switch|catch)|\bif\s+constexpr)\s*$")
QUALIFIERS = re.compile(r"(?:\s*(?:\bconst\b|\bnoexcept\b(?:\s*\([^()]*\))?|\boverride\b|\bfinal\b|\bmutable\b|&&|&|"
                        r"->\s*[\w:<>,\s\*&]+))*\s*$")
NAME = re.compile(r"((?:[A-Za-z_]\w*\s*::\s*)*~?(?:operator\s*(?:\(\)|\[\]|[^\s\w(]+|\w+)|[A-Za-z_]\w*))\s*$")


def _open_of(code, close, end):
    """The index of the bracket opening the one at `end` (`close` is ')' or '}'), or -1."""
    opening = "(" if close == ")" else "{"
    depth = 0
    k = end
    while k >= 0:
        if code[k] == close:
            depth += 1
        elif code[k] == opening:
            depth -= 1
            if depth == 0:
                return k
        k -= 1
    return -1


def _strip_qualifiers(text):
    return text[:len(text) - len(QUALIFIERS.search(text).group(0))].rstrip()


def _called(text):
    """For `text` ending in `name(...)` or `name{...}`: (name match, text before the name), or None."""
    close = text[-1:]
    if close not in (")", "}"):
        return None
    start = _open_of(text, close, len(text) - 1)
    if start < 0:
        return None
    head = text[:start].rstrip()
    match = NAME.search(head)
    return (match, head[:match.start()].rstrip()) if match else None


def _function_head(code, brace):
    """For the '{' at `brace`: (name, offset of the name) when it opens a function body, else None."""
    before = code[max(0, brace - 4000):brace]
    offset = brace - len(before)
    text = _strip_qualifiers(before)
    if text.endswith(")"):
        head = text[:_open_of(text, ")", len(text) - 1)].rstrip()
        if CONTROL.search(head) or head.endswith("="):
            return None
        if head.endswith("]"):  # a lambda outside any function
            return ("lambda", offset + head.rfind("["))
    elif not text.endswith("}"):  # `}` only as the last member of an initializer list
        return None
    called = _called(text)
    if not called:
        return None
    match, rest = called
    # The members of a constructor's initializer list, `: a(x), b{y}`, back to its colon.
    members = 0
    while rest.endswith(","):
        called = _called(rest[:-1].rstrip())
        if not called:
            return None
        rest = called[1]
        members += 1
    if rest.endswith(":") and not rest.endswith("::"):
        signature = _strip_qualifiers(rest[:-1])
        if not signature.endswith(")"):
            return None
        called = _called(signature)
        if not called:
            return None
        match = called[0]
    elif members or text.endswith("}"):
        return None
    return (re.sub(r"\s+", "", match.group(1)), offset + match.start(1))


def _exempted(lines, name_line):
    """Whether the comment block directly above the definition whose name is on `name_line`
    (1-based) starts with the exemption. Lines of the definition above its name (a template
    header, a return type on a line of its own) are skipped."""
    k = name_line - 2
    skipped = 0
    while k >= 0 and skipped < 4 and lines[k].strip() and not lines[k].lstrip().startswith("//") \
            and not lines[k].rstrip().endswith((";", "}", "{")):
        k -= 1
        skipped += 1
    if k < 0 or not lines[k].lstrip().startswith("//"):
        return False
    while k > 0 and lines[k - 1].lstrip().startswith("//"):
        k -= 1
    return lines[k].lstrip().startswith(EXEMPTION)


def long_functions(path, max_lines):
    """(line, name, length) of each function of `path` over `max_lines` and not exempted."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    code = blank(text)
    lines = text.split("\n")
    found = []
    stack = []  # per open brace: (function name, offset of its name) when it opens a function
    depth_in_function = 0
    for i, c in enumerate(code):
        if c == "{":
            head = _function_head(code, i) if depth_in_function == 0 else None
            stack.append((head, i))
            if head or depth_in_function:
                depth_in_function += 1
        elif c == "}" and stack:
            head, start = stack.pop()
            if depth_in_function:
                depth_in_function -= 1
            if head:
                length = code.count("\n", start, i) + 1
                name_line = code.count("\n", 0, head[1]) + 1
                if length > max_lines and not _exempted(lines, name_line):
                    found.append((name_line, head[0], length))
    return found


def missing_header(path):
    """Whether the .cpp `path` has neither a header of its name nor a first comment saying why."""
    if os.path.exists(path[:-len(".cpp")] + ".h"):
        return False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.lstrip().startswith("//"):
                return not line.startswith(NO_HEADER)
    return True


def sources(root, dirs):
    for directory in dirs:
        for folder, subfolders, files in os.walk(os.path.join(root, directory)):
            subfolders.sort()
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.join(folder, name)


def main(argv):
    max_lines = MAX_LINES
    if len(argv) > 2 and argv[1] == "--max-lines":
        max_lines = int(argv[2])
        argv = argv[:1] + argv[3:]
    if len(argv) < 3:
        print(__doc__.strip().split("\n\n")[2], file=sys.stderr)
        return 2
    root = argv[1]
    findings = []
    for path in sources(root, argv[2:]):
        shown = os.path.relpath(path, root)
        for line, name, length in long_functions(path, max_lines):
            findings.append(f"{shown}:{line}: {name} is {length} lines (most {max_lines}; "
                            f"split it, or say why not in a comment above it starting '{EXEMPTION}')")
        if path.endswith(".cpp") and missing_header(path):
            findings.append(f"{shown}:1: no {os.path.basename(path)[:-4]}.h beside it, and its first comment "
                            f"does not start '{NO_HEADER.strip()}'")
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
