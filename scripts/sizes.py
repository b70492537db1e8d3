#!/usr/bin/env python3
"""Function and file lengths of the non-test code of src/ (issue 30's measure).

    python3 scripts/sizes.py                  # summary, the longest functions
    python3 scripts/sizes.py --skip analysis/insight
    python3 scripts/sizes.py --over 120       # every function over 120 lines

Test code is left out: files named tests.rs (or under a tests/ folder) and every item under
`#[cfg(test)]`. A function's length is from its `fn` line to its closing brace, inclusive; a
file's length counts its non-test lines. Strings, chars and comments are skipped when braces
are matched, so a `{` in a message does not count.
"""

import argparse
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def code_mask(text):
    """`text` with every string, char literal and comment replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif (m := re.match(r'b?r(#*)"', text[i:i + 260])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'" and (m := re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12])):
            out.append(" " * m.end())
            i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching(code, start):
    """The index of the brace closing the one at `start`."""
    depth = 0
    for j in range(start, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def test_spans(code):
    """Character spans of items under `#[cfg(test)]`."""
    spans = []
    for m in re.finditer(r"#\[cfg\(test\)\]", code):
        j = m.end()
        semi = code.find(";", j)
        brace = code.find("{", j)
        if brace < 0 or (0 <= semi < brace):
            spans.append((m.start(), semi + 1))
        else:
            spans.append((m.start(), matching(code, brace) + 1))
    return spans


def measure(path):
    text = open(path, encoding="utf-8").read()
    code = code_mask(text)
    tests = test_spans(code)
    in_test = lambda pos: any(a <= pos < b for a, b in tests)
    line = lambda pos: code.count("\n", 0, pos) + 1
    functions = []
    for m in re.finditer(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)", code):
        if in_test(m.start()):
            continue
        # The body's brace: the first `{` after the signature, unless a `;` ends it first.
        j = m.end()
        depth = 0
        body = None
        while j < len(code):
            ch = code[j]
            if ch in "(<[":
                depth += 1
            elif ch in ")>]":
                depth -= 1 if ch != ">" or code[j - 1] != "-" else 0
            elif ch == ";" and depth <= 0:
                break
            elif ch == "{" and depth <= 0:
                body = j
                break
            j += 1
        if body is None:
            continue
        end = matching(code, body)
        functions.append((line(end) - line(m.start()) + 1, m.group(1), line(m.start())))
    test_lines = sum(line(b) - line(a) + 1 for a, b in tests)
    lines = text.count("\n") + (0 if text.endswith("\n") else 1) - test_lines
    return lines, functions


def is_test_file(rel):
    parts = rel.split(os.sep)
    return parts[-1] == "tests.rs" or "tests" in parts[:-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip", action="append", default=[], help="a folder of src/ to leave out")
    ap.add_argument("--over", type=int, default=120, help="list functions longer than this")
    ap.add_argument("--top", type=int, default=10, help="the longest functions shown")
    args = ap.parse_args()
    files, funcs = [], []
    for root, _, names in os.walk(SRC):
        for name in names:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, SRC)
            if is_test_file(rel) or any(rel.startswith(s.rstrip("/") + "/") for s in args.skip):
                continue
            lines, fs = measure(path)
            files.append((lines, rel))
            funcs += [(n, f"{rel}:{at} {name}") for n, name, at in fs]
    funcs.sort(reverse=True)
    files.sort(reverse=True)
    over = [f for f in funcs if f[0] > args.over]
    print(f"functions: {len(funcs)}; over 200 lines: {sum(n > 200 for n, _ in funcs)}; "
          f"over {args.over}: {len(over)}")
    print(f"files: {len(files)}; over 800 lines: {sum(n > 800 for n, _ in files)}")
    for n, rel in files:
        if rel in ("app/config/mod.rs", "app/commands/sweep.rs") or n > 800:
            print(f"  file {n:5} {rel}")
    for n, what in funcs[: max(args.top, len(over))]:
        print(f"  fn {n:5} {what}")
    kinds = {"RetrieverKind::": "adapters/retriever/", "ChatKind::": "adapters/chat/"}
    for needle, home in kinds.items():
        count = 0
        for root, _, names in os.walk(SRC):
            for name in names:
                path = os.path.join(root, name)
                rel = os.path.relpath(path, SRC)
                if not name.endswith(".rs") or rel.startswith(home) or is_test_file(rel):
                    continue
                code = code_mask(open(path, encoding="utf-8").read())
                tests = test_spans(code)
                count += sum(
                    1 for m in re.finditer(re.escape(needle), code)
                    if not any(a <= m.start() < b for a, b in tests)
                )
        print(f"{needle} outside {home}: {count}")


if __name__ == "__main__":
    sys.exit(main())
