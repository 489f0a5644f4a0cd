"""What the GLSL preprocessor sees of a model's shader source: the gate that keeps model-supplied GLSL (custom-shader
payloads, VGF COMPUTE modules, cached kernels) from opening any file of the machine it runs on.

An allow-list over the preprocessor's tokens (GLSL 4.60, 3.1-3.3; glslang's scanner), not a search for bad
spellings: a model's GLSL may hold printable ASCII, tabs and line ends only, and no double quote at all. GLSL has no
string literals — only `#include`, `#line` and `#pragma` take one — and a `"` is where a scanner and the compiler
part ways: `#define X "/*"` starts a comment for a reader that does not know strings, while glslang reads a string
and then the `#include` after it. Without `"` there is no string token, so comments, splices and line ends are all
there is to read: line ends of every form (CRLF, CR, LF) are one newline; a backslash before a newline splices the
two lines; comments become one space; then `#` at the start of a line starts a directive. `refusal` rebuilds the
text that way — twice, because whether a line continuation also continues a `//` comment depends on the GLSL version
(glslang: from 4.20 on, and ES 3.00) — and on either reading allows only the directives GLSL compute shaders use:
`#version`, `#extension` (not the include extensions), `#define` / `#undef`, the conditionals, `#error`, `#line`
with a line number, `#pragma` from a short list; a `#` elsewhere is refused, and so is the identifier `include` (a
directive name is never macro-expanded, so a macro cannot build one; `#include <file>` needs no quote). The compiler
then runs these sources from a private empty folder without include paths, under a time and a memory limit, and
checks the files it read (vulkan/shaders.py). tests/fuzz_glsl.py asks glslc and glslang whether a source the gate
passes opens a file.

A registered custom op's shader is the user's own file and may include theirs; it does not pass through here.
"""

from __future__ import annotations

import re

INCLUDE_EXTENSIONS = ("GL_GOOGLE_include_directive", "GL_ARB_shading_language_include")
_NOT_ALLOWED = re.compile(r"[^\t\n\r\x20-\x7e]")  # printable ASCII, tab, LF, CR
_INCLUDE = re.compile(r"(?<![A-Za-z0-9_])include(?![A-Za-z0-9_])")
_EXTENSION = re.compile("|".join(INCLUDE_EXTENSIONS))
_DIRECTIVE = re.compile(r"[ \t]*#[ \t]*([A-Za-z_]\w*)?(.*)")
_ANY = re.compile(r".*")
_DIRECTIVES = {  # name -> what may follow it (the rest of the line, comments already one space)
    "": re.compile(r"[ \t]*"),  # the null directive
    "version": re.compile(r"[ \t]+\d+([ \t]+(core|compatibility|es))?[ \t]*"),
    "extension": re.compile(r"[ \t]+[A-Za-z_]\w*[ \t]*:[ \t]*(require|enable|warn|disable)[ \t]*"),
    "line": re.compile(r"[ \t]+\d+[ \t]*"),  # a source-string number reads as a file name in messages
    "pragma": re.compile(
        r"[ \t]+(optimize[ \t]*\([ \t]*(on|off)[ \t]*\)|debug[ \t]*\([ \t]*(on|off)[ \t]*\)"
        r"|STDGL[ \t]+invariant[ \t]*\([ \t]*all[ \t]*\)|use_storage_buffer|use_vulkan_memory_model)[ \t]*"
    ),
    **{name: _ANY for name in ("define", "undef", "if", "ifdef", "ifndef", "elif", "else", "endif", "error")},
}
PRAGMAS = "optimize(on|off), debug(on|off), STDGL invariant(all), use_storage_buffer, use_vulkan_memory_model"
_FORMS = {  # what each directive may take, for its refusal
    "": "nothing",
    "version": "a number and a profile",
    "extension": "a name and a behaviour",
    "line": "a line number only",
    "pragma": f"only {PRAGMAS}",
}
_STRAY_HASH = "GLSL from a model may hold '#' only to start a directive or in a #define"


def refusal(source: str) -> str | None:
    """Why model GLSL `source` may not be compiled, or None. The reason never quotes the source (it may name a
    host file)."""
    readings = [code_text(source, splice_comments) for splice_comments in (True, False)]
    for code in readings:
        if _INCLUDE.search(code):
            return (
                "GLSL from a model may not #include files (nor use the word 'include' outside comments): "
                "inline what it needs"
            )
    if _NOT_ALLOWED.search(source):
        return (
            "GLSL from a model may hold printable ASCII, tabs and line ends only "
            "(no NUL, no other control or non-ASCII character)"
        )
    if '"' in source:
        return 'GLSL from a model may not hold a double quote ("), not even in a comment: GLSL has no strings'
    for code in readings:
        if _EXTENSION.search(code):
            return f"GLSL from a model may not enable an include extension ({', '.join(INCLUDE_EXTENSIONS)})"
        for line in code.split("\n"):
            if "#" not in line:
                continue
            m = _DIRECTIVE.fullmatch(line)
            if m is None:
                return _STRAY_HASH
            name, rest = m.group(1) or "", m.group(2)
            allowed = _DIRECTIVES.get(name)
            if allowed is None:
                return f"GLSL from a model may not use the directive #{name}"
            if name != "define" and "#" in rest:
                return _STRAY_HASH
            if not allowed.fullmatch(rest):
                what = _FORMS[name]
                return f"GLSL from a model may not use #{name} that way ({what})"
    return None


def code_text(source: str, splice_comments: bool = True) -> str:
    """The source as the preprocessor tokenizes it: one newline for CRLF / CR / LF, backslash-newline spliced, each
    comment one space (a `//` comment keeps its newline). `splice_comments`: whether a backslash-newline inside a
    comment splices there too (newer GLSL versions) or is two plain characters (older ones)."""
    text = source.replace("\r\n", "\n").replace("\r", "\n")
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        m = _NEXT.search(text, i)  # jumps over plain text (a load gates every model shader: keep it fast)
        if m is None:
            out.append(text[i:])
            break
        out.append(text[i : m.start()])
        i = m.start()
        if text[i] == "\\":
            i += 2  # a spliced line: the two lines are one
        elif _at(text, i + 1, True) == "/":
            i = _line_comment_end(text, _skip(text, i + 1, True) + 1, splice_comments)
            out.append(" ")
        elif _at(text, i + 1, True) == "*":
            i = _block_comment_end(text, _skip(text, i + 1, True) + 1, splice_comments)
            out.append(" ")
        else:
            out.append("/")
            i += 1
    return "".join(out)


_NEXT = re.compile(r"\\\n|/")


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
    while True:
        end = text.find("\n", i)
        if end < 0:
            return len(text)
        if not (splice and text[end - 1] == "\\" and end - 1 >= i):
            return end
        i = end + 1  # a continued comment


def _block_comment_end(text: str, i: int, splice: bool) -> int:
    """The index after the `*/` closing a block comment whose text starts at i (the end of the text if unclosed)."""
    while True:
        star = text.find("*", i)
        if star < 0:
            return len(text)
        if _at(text, star + 1, splice) == "/":
            return _skip(text, star + 1, splice) + 1
        i = star + 1
