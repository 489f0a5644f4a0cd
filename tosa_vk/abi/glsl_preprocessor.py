"""What the GLSL preprocessor sees of a model's shader source: the gate that keeps model-supplied GLSL (custom-shader
payloads, VGF COMPUTE modules, cached kernels) from opening any file of the machine it runs on.

The GLSL spec's preprocessor (GLSL 4.60, 3.1-3.3; glslang's scanner) reads a source as: line ends of every form
(CRLF, CR, LF) are one newline; a backslash before a newline splices the two lines; comments become one space;
then `#` starts a directive. A regex over the raw text misses `#\\<newline>include`, `#/**/include`,
`#inc\\<newline>lude` and CR-only line ends, so `refusal` rebuilds the text the way the preprocessor does — twice,
because whether a line continuation also continues a `//` comment depends on the GLSL version (glslang: from 4.20
on, and ES 3.00) — and refuses what either reading would let glslc resolve as a file: the identifier `include`
anywhere outside comments (a directive name is never macro-expanded, so a macro cannot build one), the include
extensions, and `#line` with a file name. Control characters other than whitespace (a NUL ends some scanners'
input early) are refused too. The compiler runs these sources without include paths and checks the files it read
(vulkan/shaders.py), so a spelling this misses still cannot reach a host file.

A registered custom op's shader is the user's own file and may include theirs; it does not pass through here.
"""

from __future__ import annotations

import re

INCLUDE_EXTENSIONS = ("GL_GOOGLE_include_directive", "GL_ARB_shading_language_include")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")  # all but \t \n \v \f \r
_INCLUDE = re.compile(r"(?<![A-Za-z0-9_])include(?![A-Za-z0-9_])")
_LINE_WITH_FILE = re.compile(r"#[ \t\v\f]*line\b[^\n]*\"")
_EXTENSION = re.compile("|".join(INCLUDE_EXTENSIONS))


def refusal(source: str) -> str | None:
    """Why model GLSL `source` may not be compiled, or None. The reason never quotes the source (it may name a
    host file)."""
    if _CONTROL.search(source):
        return "GLSL from a model may not hold control characters (NUL and the like) outside whitespace"
    for splice_comments in (True, False):
        code = code_text(source, splice_comments)
        if _INCLUDE.search(code):
            return (
                "GLSL from a model may not #include files (nor use the word 'include' outside comments): "
                "inline what it needs"
            )
        if _EXTENSION.search(code):
            return f"GLSL from a model may not enable an include extension ({', '.join(INCLUDE_EXTENSIONS)})"
        if _LINE_WITH_FILE.search(code):
            return "GLSL from a model may not name a file in a #line directive"
    return None


def code_text(source: str, splice_comments: bool = True) -> str:
    """The source as the preprocessor tokenizes it: one newline for CRLF / CR / LF, backslash-newline spliced, each
    comment one space (a `//` comment keeps its newline). `splice_comments`: whether a backslash-newline inside a
    comment splices there too (newer GLSL versions) or is two plain characters (older ones)."""
    text = source.replace("\r\n", "\n").replace("\r", "\n")
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and text.startswith("\n", i + 1):
            i += 2  # a spliced line: the two lines are one
        elif c == "/" and _at(text, i + 1, True) == "/":
            i = _line_comment_end(text, _skip(text, i + 1, True) + 1, splice_comments)
            out.append(" ")
        elif c == "/" and _at(text, i + 1, True) == "*":
            i = _block_comment_end(text, _skip(text, i + 1, True) + 1, splice_comments)
            out.append(" ")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _skip(text: str, i: int, splice: bool) -> int:
    """The index of the first character at or after i that is not part of a backslash-newline (i without splicing)."""
    while splice and text.startswith("\\\n", i):
        i += 2
    return i


def _at(text: str, i: int, splice: bool) -> str:
    """The character at i after any splices ('' at the end)."""
    i = _skip(text, i, splice)
    return text[i] if i < len(text) else ""


def _line_comment_end(text: str, i: int, splice: bool) -> int:
    """Where a `//` comment whose text starts at i ends: at its newline, which is kept (not consumed)."""
    while i < len(text):
        if splice and text.startswith("\\\n", i):
            i += 2
        elif text[i] == "\n":
            return i
        else:
            i += 1
    return i


def _block_comment_end(text: str, i: int, splice: bool) -> int:
    """The index after the `*/` closing a block comment whose text starts at i (the end of the text if unclosed)."""
    while i < len(text):
        if text[i] == "*" and _at(text, i + 1, splice) == "/":
            return _skip(text, i + 1, splice) + 1
        i += 1
    return i
