#!/usr/bin/env python3
"""Lengths of the C++ function definitions in the product's .cc files.

  function_lengths.py [--root TREE] [--top N] [DIR...]
      prints the N longest (default 20) as "LINES  FILE:LINE  NAME"
  function_lengths.py [--root TREE] --max-lines 80 --check [--allow FILE] [DIR...]
      exits 1 listing every function longer than the limit that the
      allow-list does not name

DIRs default to the product's C++ directories (agent, base, elf,
symbolizer, unwind_tables; those that exist), relative to TREE: this
repository, or another checkout of it (scripts/code_metrics.py --rev).
A function's length runs from the first line of its signature to its
closing brace, both included. Definitions are found by brace matching
after comments, string and character literals and preprocessor lines are
blanked: a brace block at namespace or class scope whose header has a
parameter list is a function (a constructor's brace initializers belong to
it). No dependencies beyond python3.

The allow-list (default TREE/scripts/function_lengths_allow.txt) holds one
"PATH NAME  reason" a line, PATH relative to TREE, NAME as
printed; '#' starts a comment. An entry that matches nothing is an error,
so the list cannot outlive its functions."""
import argparse
import os
import re
import sys

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DEFAULT_ROOTS = ["agent", "base", "elf", "symbolizer", "unwind_tables"]

RAW_STRING = re.compile(r'R"([^()\\ ]{0,16})\(')
SCOPE_KEYWORD = re.compile(r"^(?:template\s*<.*>\s*)?(namespace|class|struct|union|enum|extern)\b",
                           re.S)
ACCESS_LABELS = re.compile(r"\s*(?:(?:public|private|protected)\s*:(?!:)\s*)+")
CONTROL = re.compile(r"^(?:if|for|while|switch|catch|do|else|return)\b")


def blank(text):
    """The text with comments, literals and preprocessor lines replaced by
    spaces (newlines kept, so offsets and line numbers still hold)."""
    out = list(text)
    i, n = 0, len(text)
    at_line_start = True

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            j = i
            while j < n and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            wipe(i, min(j, n))
            i = j
            continue
        if c == "\n":
            at_line_start = True
            i += 1
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j)
            i = j
        elif (m := RAW_STRING.match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + m.group(1) + '"', m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            wipe(i + 1, j)
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            # A ' after a digit or letter is a digit separator (1'000) or
            # part of a prefix handled with the literal itself.
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            wipe(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def top_level(header, ch):
    """Whether ch occurs in header outside parentheses, brackets and angle
    brackets of templates (roughly: '<' after an identifier)."""
    depth = 0
    for c in header:
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == ch and depth == 0:
            return True
    return False


def function_name(header):
    paren = header.find("(")
    if "operator" in header[:paren + 1]:
        m = re.search(r"([\w:~]*operator\s*[^\s(]+|[\w:~]*operator\s*\(\))\s*\(", header)
        if m:
            return re.sub(r"\s+", "", m.group(1))
    m = re.search(r"([\w:~]+)\s*(?:<[^()]*>)?\s*$", header[:paren])
    return m.group(1) if m else header[:paren].strip().split()[-1:] or "?"


def strip_template(h):
    """h without a leading template<...> (its default arguments hold '=')."""
    m = re.match(r"template\s*<", h)
    if not m:
        return h
    depth, i = 0, m.end() - 1
    for i in range(m.end() - 1, len(h)):
        depth += {"<": 1, ">": -1}.get(h[i], 0)
        if depth == 0:
            return h[i + 1:].strip()
    return h


def is_function(header):
    h = strip_template(header.strip())
    if not h or "(" not in h or SCOPE_KEYWORD.match(h) or CONTROL.match(h):
        return False
    before = h[:h.find("(")]
    if "operator" not in before and top_level(before, "="):
        return False  # a variable's initializer: `auto f = [](...) {`
    return not before.rstrip().endswith(("=", "return"))


def match_brace(src, i):
    depth = 0
    for j in range(i, len(src)):
        if src[j] == "{":
            depth += 1
        elif src[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(src) - 1


def functions(path):
    """(name, first line, last line) of each function defined in path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    src = blank(text)
    line_of = [0] * (len(src) + 1)
    line = 1
    for k, c in enumerate(src):
        line_of[k] = line
        if c == "\n":
            line += 1
    line_of[len(src)] = line
    found = []

    def scan(lo, hi, owner):
        header_start = lo
        i = lo
        while i < hi:
            c = src[i]
            if c in ";}":
                header_start = i + 1
            elif c == "{":
                # An access label ends no statement: it is not the header's.
                label = ACCESS_LABELS.match(src, header_start, i)
                header_start = label.end() if label else header_start
                header = src[header_start:i]
                if is_function(header):
                    end = match_brace(src, i)
                    # Brace initializers of a constructor's member list: the
                    # body is the block not followed by ',' or '{'.
                    while True:
                        k = end + 1
                        while k < hi and src[k].isspace():
                            k += 1
                        if k < hi and src[k] in ",{" and ")" in header and ":" in header:
                            nxt = src.find("{", k)
                            if nxt < 0 or nxt >= hi:
                                break
                            end = match_brace(src, nxt)
                            continue
                        break
                    first = header_start + len(header) - len(header.lstrip())
                    name = function_name(header)
                    found.append((owner + name if "::" not in name else name, line_of[first],
                                  line_of[end]))
                    i = end
                    header_start = end + 1
                else:
                    end = match_brace(src, i)
                    h = header.strip()
                    kw = SCOPE_KEYWORD.match(h)
                    if kw and kw.group(1) in ("namespace", "extern"):
                        scan(i + 1, end, owner)
                    elif kw and kw.group(1) in ("class", "struct", "union"):
                        m = re.match(r"(?:template\s*<.*>\s*)?(?:class|struct|union)\s+(?:\w+\s+)*?(\w+)\s*(?:final\s*)?(?::|$)", h, re.S)
                        scan(i + 1, end, owner + (m.group(1) + "::" if m else ""))
                    i = end
                    header_start = end + 1
            i += 1

    scan(0, len(src), "")
    return found


def collect(tree, roots):
    out = []
    for root in roots:
        top = root if os.path.isabs(root) else os.path.join(tree, root)
        if not os.path.isdir(top):
            continue
        for d, dirs, files in os.walk(top):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".cc"):
                    path = os.path.join(d, name)
                    rel = os.path.relpath(path, tree)
                    for fn, first, last in functions(path):
                        out.append((last - first + 1, rel, first, fn))
    out.sort(key=lambda r: (-r[0], r[1], r[2]))
    return out


def read_allow(path):
    allow = {}
    if not os.path.exists(path):
        return allow
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            text = raw.split("#", 1)[0].strip()
            if not text:
                continue
            parts = text.split(None, 2)
            if len(parts) < 3:
                sys.exit(f"function_lengths.py: {path}:{n}: want 'PATH NAME reason', got '{text}'")
            allow[(parts[0], parts[1])] = n
    return allow


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roots", nargs="*", default=DEFAULT_ROOTS, metavar="DIR")
    ap.add_argument("--root", default=REPO, help="the tree to measure (default: this repository)")
    ap.add_argument("--top", type=int, default=20, help="how many to print (default 20)")
    ap.add_argument("--max-lines", type=int, help="the limit --check enforces")
    ap.add_argument("--check", action="store_true", help="exit 1 when a function is over the limit")
    ap.add_argument("--allow", help="allow-list file (default TREE/scripts/function_lengths_allow.txt)")
    args = ap.parse_args()
    rows = collect(args.root, args.roots)
    if not args.check:
        for length, rel, line, fn in rows[:args.top]:
            print(f"{length:5d}  {rel}:{line}  {fn}")
        return 0
    if args.max_lines is None:
        ap.error("--check needs --max-lines")
    allow_path = args.allow or os.path.join(args.root, "scripts", "function_lengths_allow.txt")
    allow = read_allow(allow_path)
    used, over = set(), []
    for length, rel, line, fn in rows:
        if length <= args.max_lines:
            break
        if (rel, fn) in allow:
            used.add((rel, fn))
        else:
            over.append(f"{rel}:{line}: {fn} is {length} lines (limit {args.max_lines})")
    stale = [f"{allow_path}:{n}: '{p} {fn}' names no function over the limit"
             for (p, fn), n in sorted(allow.items(), key=lambda kv: kv[1]) if (p, fn) not in used]
    for msg in over + stale:
        print(msg)
    if over or stale:
        return 1
    print(f"function_lengths: {len(rows)} functions, none over {args.max_lines} lines "
          f"outside the allow-list ({len(used)} allowed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
