"""What the checks that read C++ (sizes.py, typed_seams.py) share: a source cut
into its comments, string and character literals and the code between them, so
that a check can look at the code without what comments and literals say, or at
the literals alone."""
import re

RAW_STRING = re.compile(r'R"([^(\s]*)\(')


def pieces(source):
    """(kind, text) pieces that join back into `source`: "comment" (// to the end
    of the line, or /* */), "string" (a literal with its quotes, raw ones
    included), "char" (a character literal) or "code". A quote after a digit or
    a letter is a digit separator (1'000) or part of a name, not a literal; an
    unterminated literal ends at the end of its line."""
    i, n, code_start = 0, len(source), 0
    while i < n:
        kind, j = None, i
        if source.startswith("//", i):
            j = source.find("\n", i)
            kind, j = "comment", n if j < 0 else j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            kind, j = "comment", n if j < 0 else j + 2
        elif m := RAW_STRING.match(source, i):
            end = ")" + m.group(1) + '"'
            j = source.find(end, m.end())
            kind, j = "string", n if j < 0 else j + len(end)
        elif source[i] == '"' or (source[i] == "'" and
                                  not (i and source[i - 1].isalnum())):
            quote, j = source[i], i + 1
            while j < n and source[j] != quote and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            kind = "string" if quote == '"' else "char"
            j = min(j + 1, n) if j < n and source[j] == quote else min(j, n)
        if kind is None:
            i += 1
            continue
        if code_start < i:
            yield "code", source[code_start:i]
        yield kind, source[i:j]
        i = code_start = j
    if code_start < n:
        yield "code", source[code_start:]


def literal_content(text):
    """The characters of the string literal `text` between its delimiters."""
    if m := RAW_STRING.match(text):
        return text[m.end():len(text) - len(m.group(1)) - 2]
    return text[1:-1] if len(text) > 1 and text.endswith('"') else text[1:]
