#!/usr/bin/env python3
"""checksources.py on small sources written here, whose function lengths are known by
construction: one of 121 lines is found, one of 120 is not, one exempted by its comment is not,
and braces in comments, strings, character and raw string literals and directives are not code."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checksources  # noqa: E402


def line_of(text, start):
    """The 1-based number of the line of `text` that starts with `start`."""
    return [line.startswith(start) for line in text.split("\n")].index(True) + 1


def body(lines):
    """A function body of exactly `lines` lines, from its opening brace to its closing one."""
    return "{\n" + "    ++calls;\n" * (lines - 2) + "}\n"


class FunctionLength(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.root = self.folder.name
        os.makedirs(os.path.join(self.root, "core"))

    def tearDown(self):
        self.folder.cleanup()

    def write(self, name, text):
        path = os.path.join(self.root, "core", name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_a_function_over_the_limit_is_found_with_its_line_name_and_length(self):
        path = self.write("sizes.cpp", "int calls = 0;\n\nvoid longest()\n" + body(121)
                          + "\nvoid longestAllowed()\n" + body(120))
        self.assertEqual(checksources.long_functions(path, 120), [(3, "longest", 121)])

    def test_the_exemption_comment_directly_above_keeps_a_function_whole(self):
        text = ("// Per-cycle loop: one router's cycle, its phases share registers.\n"
                "// More of the reason.\ntemplate <int kSlots>\nint Mesh::step(int row) const\n"
                + body(130) + "\n// Another comment, not the exemption.\nvoid other()\n" + body(130)
                + "\n// Per-cycle loop: not directly above: a blank line between.\n\nvoid third()\n"
                + body(130))
        path = self.write("loop.cpp", text)
        self.assertEqual(checksources.long_functions(path, 120),
                         [(line_of(text, "void other"), "other", 130), (line_of(text, "void third"), "third", 130)])

    def test_braces_in_comments_strings_and_literals_are_not_code(self):
        tricky = ('    const char* open = "{{{ \\" {";\n'
                  "    const char close = '}';\n"
                  "    const char quote = '\\'';\n"
                  "    // } a comment that closes nothing\n"
                  "    /* { and }} */\n"
                  '    const char* raw = R"x(}} " {)x";\n'
                  "#define BRACE {\n"
                  "    const long million = 1'000'000; // a digit separator, not a character\n"
                  "    const char open2 = '{';\n")
        # Nine tricky lines and the rest plain: 121 lines whatever the braces inside say.
        text = "void tricky()\n{\n" + tricky + "    ++calls;\n" * (121 - 2 - 9) + "}\n\nvoid after()\n" + body(120)
        path = self.write("tricky.cpp", text)
        self.assertEqual(checksources.long_functions(path, 120), [(1, "tricky", 121)])

    def test_a_constructor_is_named_past_its_initializer_list_and_control_blocks_are_not_functions(self):
        text = ("Widget::Widget(int size)\n    : m_size(size)\n    , m_items { size, 0 }\n" + body(121)
                + "\nstruct Box {\n    int area() const noexcept\n" + body(121).replace("\n", "\n    ", 120)
                + "};\n")
        path = self.write("ctor.cpp", text)
        self.assertEqual(checksources.long_functions(path, 120),
                         [(1, "Widget::Widget", 121), (line_of(text, "    int area"), "area", 121)])
        inner = "void outer()\n{\n    if (calls) {\n" + "        ++calls;\n" * 200 + "    }\n}\n"
        path = self.write("inner.cpp", inner)
        self.assertEqual(checksources.long_functions(path, 120), [(1, "outer", 204)])


class OwnHeader(unittest.TestCase):
    def test_a_cpp_needs_its_header_or_a_reason(self):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "app"))
            files = {
                "paired.cpp": "#include \"paired.h\"\n", "paired.h": "#pragma once\n",
                "reasoned.cpp": "// No header of its own: defines the members of Foo declared in foo.h.\n",
                "unreasoned.cpp": "// Foo's members.\n// No header of its own: too late, not the first comment.\n",
            }
            for name, text in files.items():
                with open(os.path.join(root, "app", name), "w", encoding="utf-8") as f:
                    f.write(text)
            folder = os.path.join(root, "app")
            self.assertFalse(checksources.missing_header(os.path.join(folder, "paired.cpp")))
            self.assertFalse(checksources.missing_header(os.path.join(folder, "reasoned.cpp")))
            self.assertTrue(checksources.missing_header(os.path.join(folder, "unreasoned.cpp")))
            self.assertEqual(checksources.main(["checksources.py", root, "app"]), 1)


if __name__ == "__main__":
    unittest.main()
