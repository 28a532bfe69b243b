#!/usr/bin/env python3
"""The source tree's shape, measured (issue 16): files, function lengths, import cycles and
attack-name tests of src/.

Goals of the issue: no file in src/ over 700 lines, no function over 120 lines, no import cycle
between files of src/.

    python3 scripts/shape.py               human-readable tables
    python3 scripts/shape.py --json        one JSON object with everything below
    python3 scripts/shape.py --check       exit 1 if a limit is broken, saying which
    python3 scripts/shape.py --rev HEAD    measure a git revision instead of the working tree
    python3 scripts/shape.py --self-test   run the embedded cases

What is measured, and how:

* Files: every .rs file under src/ with its line count (`wc -l`: the number of newlines).
* Functions: every `fn` item with a body (free functions, methods, trait default methods, nested
  fns; closures are not functions), from the line of its `fn` keyword to the line of its closing
  brace. The source is tokenised first, so braces in comments (// and nested /* */), string
  literals (also raw r#"..."#, byte and C strings) and char literals ('{') are not counted, and
  lifetimes ('a) are not mistaken for chars. Functions inside #[cfg(test)] items, #[test]
  functions, and files declared by `#[cfg(test)] mod x;` are test code: they are listed but the
  limit applies to the others.
* Imports: a file-level graph per crate (the library rooted at src/lib.rs, each binary rooted at
  src/bin/NAME.rs or src/bin/NAME/main.rs; a binary's `leakscope::` paths are external to it).
  Edges come from `use` trees (nested braces, self, globs, `as`, multi-line, `pub use`) and from
  paths in code that begin with `crate::`, `super::`, `self::`, a module declared in scope
  (`mod x;` then `x::f()`) or a module brought in by `use` (`use crate::a::b;` then `b::f()`).
  A path resolves to the longest module path that is a file; when the next name is one that file
  only imports (`pub use` re-exports such as `crate::Result` or `crate::table::Dataset`, or a
  private `use` a child reaches through `super::`), the path is followed to the file that defines
  it, so a facade module is not made a dependency of everything that names through it (the
  facade's own `pub use` is its edge). A `use` that only names a module (`use crate::a::b;`)
  makes an edge where the module is used. `mod child;` itself is not an edge.
  Cycles are strongly connected components (Tarjan) of more than one file. The headline counts
  the graph of non-test code; the cycles that appear only when #[cfg(test)] code is counted are
  listed separately, and so are parent<->child cycles (a file using its ancestor's items while
  the ancestor uses its own), which are included in the headline.
* Attack-name tests: `AttackKind::` used with `==` or `!=`, inside `matches!(...)`, or in the
  pattern of a `match` arm (anywhere in the pattern: `AttackKind::A | AttackKind::B =>`,
  `(AttackKind::A, _) =>`), across src/ and src/bin/, outside the registry file (--registry).
"""
import argparse
import json
import os
import re
import subprocess
import sys

FILE_LIMIT = 700
FN_LIMIT = 120

# ----------------------------------------------------------------------------------------------
# Lexer


class Tok:
    __slots__ = ("k", "v", "line")

    def __init__(self, k, v, line):
        self.k = k  # 'id', 'p' (punctuation), 'lit' (string, char, number), 'lt' (lifetime)
        self.v = v
        self.line = line

    def __repr__(self):
        return "%s:%r@%d" % (self.k, self.v, self.line)


PUNCT = sorted(
    ["::", "->", "=>", "==", "!=", "<=", ">=", "..=", "...", "..", "&&", "||",
     "+=", "-=", "*=", "/=", "%=", "^=", "&=", "|="],
    key=len,
    reverse=True,
)
RAW_STR = re.compile(r'[bc]?r(#*)"')
NUMBER = re.compile(
    r"0[xob][0-9a-fA-F_]+[A-Za-z0-9_]*"
    r"|[0-9][0-9_]*(?:\.(?![.A-Za-z_])[0-9_]*)?(?:[eE][+-]?[0-9_]+)?[A-Za-z0-9_]*"
)
KEYWORDS = set(
    "as async await break const continue crate dyn else enum extern false fn for if impl in let "
    "loop match mod move mut pub ref return self Self static struct super trait true type union "
    "unsafe use where while".split()
)


def is_ident_start(c):
    return c == "_" or c.isalpha()


def is_ident_char(c):
    return c == "_" or c.isalnum()


def lex(text):
    """Tokens of Rust source, without comments; literals are single tokens."""
    toks = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            continue
        if c.isspace():
            i += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth += 1
                    j += 2
                elif text.startswith("*/", j):
                    depth -= 1
                    j += 2
                else:
                    j += 1
            line += text.count("\n", i, j)
            i = j
            continue
        m = RAW_STR.match(text, i) if c in "bcr" else None
        if m:
            close = '"' + m.group(1)
            j = text.find(close, m.end())
            j = n if j < 0 else j + len(close)
            toks.append(Tok("lit", text[i:j], line))
            line += text.count("\n", i, j)
            i = j
            continue
        if c == '"' or (c in "bc" and text.startswith('"', i + 1)):
            j = i + (1 if c == '"' else 2)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            toks.append(Tok("lit", text[i:j], line))
            line += text.count("\n", i, j)
            i = j
            continue
        if c == "'" or (c == "b" and text.startswith("'", i + 1)):
            q = i if c == "'" else i + 1
            if text.startswith("\\", q + 1):  # '\n', '\'', '\u{..}'
                j = text.find("'", q + 3)
                j = n if j < 0 else j + 1
                toks.append(Tok("lit", text[i:j], line))
                i = j
                continue
            if q + 2 < n and text[q + 2] == "'" and text[q + 1] != "\n":  # 'x', '{'
                toks.append(Tok("lit", text[i:q + 3], line))
                i = q + 3
                continue
            if c == "'":  # lifetime or label
                j = i + 1
                while j < n and is_ident_char(text[j]):
                    j += 1
                toks.append(Tok("lt", text[i:j], line))
                i = j
                continue
        if c == "r" and text.startswith("r#", i) and i + 2 < n and is_ident_start(text[i + 2]):
            j = i + 2
            while j < n and is_ident_char(text[j]):
                j += 1
            toks.append(Tok("id", "r#" + text[i + 2:j], line))
            i = j
            continue
        if is_ident_start(c):
            j = i + 1
            while j < n and is_ident_char(text[j]):
                j += 1
            toks.append(Tok("id", text[i:j], line))
            i = j
            continue
        if c.isdigit():
            m = NUMBER.match(text, i)
            toks.append(Tok("lit", m.group(0), line))
            i = m.end()
            continue
        for p in PUNCT:
            if text.startswith(p, i):
                toks.append(Tok("p", p, line))
                i += len(p)
                break
        else:
            toks.append(Tok("p", c, line))
            i += 1
    return toks


def match_delims(toks):
    """Index of each (, [, { to its closer and back; unbalanced ones are left out."""
    pairs, stack = {}, []
    close = {")": "(", "]": "[", "}": "{"}
    for i, t in enumerate(toks):
        if t.k != "p":
            continue
        if t.v in "([{":
            stack.append(i)
        elif t.v in close:
            # tolerate a stray closer: pop to the nearest opener of its kind
            k = len(stack) - 1
            while k >= 0 and toks[stack[k]].v != close[t.v]:
                k -= 1
            if k >= 0:
                o = stack[k]
                del stack[k:]
                pairs[o] = i
                pairs[i] = o
    return pairs


# ----------------------------------------------------------------------------------------------
# One file's structure: functions, module scopes, uses, paths


def is_p(toks, i, v):
    return 0 <= i < len(toks) and toks[i].k == "p" and toks[i].v == v


def is_id(toks, i, v=None):
    return 0 <= i < len(toks) and toks[i].k == "id" and (v is None or toks[i].v == v)


def attr_info(toks, lo, hi):
    """(is test, #[path] value) of the attribute whose tokens are toks[lo:hi]."""
    vals = [t.v for t in toks[lo:hi]]
    path = None
    if vals[:1] == ["test"] and len(vals) == 1:
        return True, None
    if vals[:1] == ["cfg"] and "test" in vals and "not" not in vals:
        return True, None
    if vals[:2] == ["path", "="] and len(vals) >= 3 and toks[lo + 2].k == "lit":
        path = toks[lo + 2].v.strip('"')
    return False, path


def body_of(toks, pairs, i):
    """From toks[i], the index of the first `{` outside ( ) and [ ], or None at a `;` first."""
    j = i
    while j < len(toks):
        t = toks[j]
        if t.k == "p":
            if t.v in "([" and j in pairs:
                j = pairs[j] + 1
                continue
            if t.v == "{":
                return j
            if t.v in (";", "}"):
                return None
        j += 1
    return None


def impl_name(toks, lo, hi):
    """The self type's name of `impl<..> [Trait for] Type [where ..]` in toks[lo:hi]."""
    j = lo
    if is_p(toks, j, "<"):
        depth = 0
        while j < hi:
            if is_p(toks, j, "<"):
                depth += 1
            elif is_p(toks, j, ">"):
                depth -= 1
                if depth == 0:
                    j += 1
                    break
            j += 1
    seg, depth = toks[j:hi], 0
    for k, t in enumerate(seg):
        if t.k == "p" and t.v == "<":
            depth += 1
        elif t.k == "p" and t.v == ">":
            depth -= 1
        elif depth == 0 and t.k == "id" and t.v == "for":
            seg = seg[k + 1:]
            break
    name, depth = "?", 0
    for t in seg:
        if t.k == "p" and t.v == "<":
            depth += 1
        elif t.k == "p" and t.v == ">":
            depth -= 1
        elif depth == 0 and t.k == "id":
            if t.v == "where":
                break
            if t.v not in ("dyn", "mut", "const", "unsafe"):
                name = t.v
    return name


def parse_use_tree(toks, j, prefix, out):
    """Leaves of the use tree at toks[j]: (segments, alias, line); returns the index after it."""
    segs = list(prefix)
    if is_p(toks, j, "::"):
        segs.append("::")  # a leading `::` names an external crate
        j += 1
    while j < len(toks):
        t = toks[j]
        if t.k == "p" and t.v == "{":
            j += 1
            while j < len(toks) and not is_p(toks, j, "}"):
                j = parse_use_tree(toks, j, segs, out)
                if is_p(toks, j, ","):
                    j += 1
                elif not is_p(toks, j, "}"):
                    j += 1  # something unexpected: step over it
            return j + 1
        if t.k == "p" and t.v == "*":
            out.append((segs + ["*"], None, t.line))
            return j + 1
        if t.k == "p" and t.v == "$" and is_id(toks, j + 1, "crate"):
            j += 1
            continue
        if t.k == "id":
            segs.append(t.v)
            j += 1
            if is_p(toks, j, "::"):
                j += 1
                continue
            alias, line = None, t.line
            if is_id(toks, j, "as") and j + 1 < len(toks):
                alias, line = toks[j + 1].v, toks[j + 1].line
                j += 2
            out.append((segs, alias, line))
            return j
        return j  # `;` or something unexpected
    return j


class FileInfo:
    def __init__(self, path, text):
        self.path = path
        self.text = text
        self.lines = text.split("\n")
        self.toks = lex(text)
        self.pairs = match_delims(self.toks)
        self.file_test = False  # #![cfg(test)] at the top
        self.fns = []  # dicts
        self.mod_decls = []  # (scope, name, test, path attr, line) for `mod x;`
        self.scopes = {(): {"children": set(), "test": False}}  # inline modules, relative
        self.uses = []  # dicts: scope, test, module_level, leaves
        self.refs = []  # dicts: scope, test, segs, line
        self.defs = set()  # names of items at the file's top level
        self.matches_patterns = set()  # token indices in match-arm patterns
        self.scan()

    def src_line(self, line):
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1].strip()
        return ""

    def scan(self):
        toks, pairs = self.toks, self.pairs
        n = len(toks)
        # opening brace index -> (kind, name)
        opens = {}
        # frame: kind, name, test, scope(rel modpath)
        frames = [{"kind": "mod", "name": None, "test": False, "scope": ()}]
        level = 0  # depth of ( [ { together
        pend = None  # pending outer attributes: {"level", "test", "path"}
        self.tok_test = bytearray(n)  # 1 where a token is in test code
        filled = 0
        i = 0
        while i < n:
            t = toks[i]
            top = frames[-1]
            if top["test"]:
                self.tok_test[filled:i + 1] = b"\x01" * (i + 1 - filled)
            filled = i + 1
            if t.k == "p":
                v = t.v
                if v == "#" and (is_p(toks, i + 1, "[") or (is_p(toks, i + 1, "!") and is_p(toks, i + 2, "["))):
                    inner = is_p(toks, i + 1, "!")
                    o = i + 2 if inner else i + 1
                    c = pairs.get(o)
                    if c is None:
                        i += 1
                        continue
                    test, path = attr_info(toks, o + 1, c)
                    if inner:
                        if test:
                            top["test"] = True
                            if len(frames) == 1:
                                self.file_test = True
                            else:
                                self.scopes[top["scope"]]["test"] = True
                    else:
                        if pend is None or pend["level"] != level:
                            pend = {"level": level, "test": False, "path": None}
                        pend["test"] = pend["test"] or test
                        pend["path"] = path or pend["path"]
                    i = c + 1
                    continue
                if v in "([":
                    level += 1
                elif v == "{":
                    kind, name = opens.get(i, ("block", None))
                    test = top["test"] or bool(pend and pend["level"] == level and pend["test"])
                    scope = top["scope"]
                    if kind == "mod":
                        scope = scope + (name,)
                        self.scopes.setdefault(scope, {"children": set(), "test": test})
                        self.scopes[scope]["test"] = test
                    frames.append({"kind": kind, "name": name, "test": test, "scope": scope})
                    if pend and pend["level"] == level:
                        pend = None
                    level += 1
                elif v in ")]}":
                    level -= 1
                    if v == "}" and len(frames) > 1:
                        frames.pop()
                    if pend and pend["level"] > level:
                        pend = None
                elif v in (";", ","):
                    if pend and pend["level"] == level:
                        pend = None
                i += 1
                continue
            if t.k != "id":
                i += 1
                continue
            v = t.v
            ptest = top["test"] or bool(pend and pend["level"] == level and pend["test"])
            at_module = top["kind"] == "mod"
            if v == "mod" and is_id(toks, i + 1) and toks[i + 1].v not in KEYWORDS:
                name = toks[i + 1].v
                self.scopes[top["scope"]]["children"].add(name)
                if at_module and not top["scope"]:
                    self.defs.add(name)
                if is_p(toks, i + 2, "{"):
                    opens[i + 2] = ("mod", name)
                elif is_p(toks, i + 2, ";"):
                    self.mod_decls.append(
                        (top["scope"], name, ptest, pend["path"] if pend and pend["level"] == level else None, t.line)
                    )
                i += 2
                continue
            if v == "fn" and is_id(toks, i + 1) and toks[i + 1].v not in KEYWORDS:
                name = toks[i + 1].v
                if at_module and not top["scope"]:
                    self.defs.add(name)
                b = body_of(toks, pairs, i + 2)
                if b is not None and b in pairs:
                    opens[b] = ("fn", name)
                    owner = None
                    outer = None
                    for f in reversed(frames):
                        if f["kind"] == "fn" and outer is None:
                            outer = f["name"]
                        if f["kind"] in ("impl", "trait"):
                            owner = f["name"]
                            break
                        if f["kind"] == "mod":
                            break
                    qual = (owner + "::" if owner else "") + name
                    end = toks[pairs[b]].line
                    self.fns.append({
                        "name": name,
                        "qual": qual,
                        "nested_in": outer,
                        "line": t.line,
                        "end": end,
                        "lines": end - t.line + 1,
                        "test": ptest,
                        "scope": top["scope"],
                    })
                i += 2
                continue
            if v in ("impl", "trait") and (i == 0 or toks[i - 1].k == "p" and toks[i - 1].v in (";", "{", "}", "]")
                                           or is_id(toks, i - 1, "unsafe") or is_id(toks, i - 1, "pub")
                                           or is_p(toks, i - 1, ")") and v == "trait"):
                b = body_of(toks, pairs, i + 1)
                if b is not None:
                    if v == "impl":
                        opens[b] = ("impl", impl_name(toks, i + 1, b))
                    elif is_id(toks, i + 1):
                        opens[b] = ("trait", toks[i + 1].v)
                        if at_module and not top["scope"]:
                            self.defs.add(toks[i + 1].v)
                i += 1
                continue
            if v in ("struct", "enum", "union", "type", "const", "static") and at_module and not top["scope"]:
                k = i + 1
                if is_id(toks, k, "mut"):
                    k += 1
                if is_id(toks, k) and toks[k].v not in KEYWORDS:
                    self.defs.add(toks[k].v)
            if v == "macro_rules" and is_p(toks, i + 1, "!") and is_id(toks, i + 2) and at_module and not top["scope"]:
                self.defs.add(toks[i + 2].v)
            if v == "use":
                leaves = []
                j = parse_use_tree(toks, i + 1, [], leaves)
                while j < n and not is_p(toks, j, ";"):
                    j += 1
                pub = is_id(toks, i - 1, "pub") or (is_p(toks, i - 1, ")") and is_id(toks, pairs.get(i - 1, 0) - 1, "pub"))
                self.uses.append({
                    "scope": top["scope"],
                    "test": ptest,
                    "module_level": at_module,
                    "pub": pub,
                    "leaves": leaves,
                    "line": t.line,
                })
                if pend and pend["level"] == level:
                    pend = None
                i = j + 1
                continue
            if v == "match":
                self.mark_match(i)
            # a path in code: first segment lowercase (modules are snake_case), not mid-path
            if is_p(toks, i + 1, "::") and is_id(toks, i + 2) and not is_p(toks, i - 1, "::") \
                    and (v[:1].islower() or v[:1] == "_") and not is_p(toks, i - 1, "."):
                if is_id(toks, i - 1, "in") and is_p(toks, i - 2, "("):  # pub(in crate::x)
                    i += 1
                    continue
                segs, j = [v], i + 1
                while is_p(toks, j, "::") and is_id(toks, j + 1):
                    segs.append(toks[j + 1].v)
                    j += 2
                self.refs.append({"scope": top["scope"], "test": ptest, "segs": segs, "line": toks[j - 1].line})
                i = j
                continue
            i += 1

    def mark_match(self, i):
        """Mark the token indices of the arm patterns (before `=>` or a guard) of `match` at i."""
        toks, pairs = self.toks, self.pairs
        b = body_of(toks, pairs, i + 1)
        if b is None or b not in pairs:
            return
        end = pairs[b]
        j = b + 1
        while j < end:
            start, guard = j, None
            while j < end and not is_p(toks, j, "=>"):
                if toks[j].k == "p" and toks[j].v in "([{" and j in pairs:
                    j = pairs[j] + 1
                    continue
                if guard is None and is_id(toks, j, "if"):
                    guard = j
                j += 1
            for k in range(start, guard if guard is not None else j):
                self.matches_patterns.add(k)
            j += 1
            if is_p(toks, j, "{") and j in pairs:
                j = pairs[j] + 1
                if is_p(toks, j, ","):
                    j += 1
                continue
            while j < end and not is_p(toks, j, ","):
                if toks[j].k == "p" and toks[j].v in "([{" and j in pairs:
                    j = pairs[j] + 1
                    continue
                j += 1
            j += 1


# ----------------------------------------------------------------------------------------------
# The tree: crates, module paths, edges


def crate_and_module(path):
    """('lib', ('a', 'b')) for src/a/b.rs; ('bin:NAME', (...)) for files of src/bin/NAME."""
    rel = path[len("src/"):]
    parts = rel[:-3].split("/")
    if parts[0] == "bin" and len(parts) >= 2:
        if len(parts) == 2:
            return "bin:" + parts[1], ()
        crate, parts = "bin:" + parts[1], parts[2:]
        if parts == ["main"]:
            return crate, ()
    else:
        crate = "lib"
        if parts == ["lib"]:
            return crate, ()
    if parts[-1] == "mod":
        parts = parts[:-1]
    return crate, tuple(parts)


def mod_name(crate, mod):
    root = "crate" if crate == "lib" else crate
    return "::".join((root,) + mod)


class Tree:
    def __init__(self, sources, registry="src/attack/registry.rs"):
        self.files = {p: FileInfo(p, s) for p, s in sorted(sources.items()) if p.endswith(".rs")}
        self.registry = registry
        self.by_mod = {}
        self.mod_of = {}
        for p in self.files:
            cm = crate_and_module(p)
            self.mod_of[p] = cm
            self.by_mod.setdefault(cm, p)
        self.apply_path_attrs()
        self.mark_test_files()
        self.resolve_all()

    def apply_path_attrs(self):
        for p, f in self.files.items():
            crate, mod = self.mod_of[p]
            for scope, name, test, path, line in f.mod_decls:
                if path:
                    base = os.path.dirname(p) if (p.endswith("/mod.rs") or mod == ()) else p[:-3]
                    target = os.path.normpath(os.path.join(base, path))
                    if target in self.files:
                        self.mod_of[target] = (crate, mod + scope + (name,))
                        self.by_mod[(crate, mod + scope + (name,))] = target

    def mark_test_files(self):
        prefixes = []
        for p, f in self.files.items():
            crate, mod = self.mod_of[p]
            if f.file_test:
                prefixes.append((crate, mod))
            for scope, name, test, path, line in f.mod_decls:
                if test or f.scopes.get(scope, {}).get("test"):
                    prefixes.append((crate, mod + scope + (name,)))
        self.test_files = set()
        for p in self.files:
            crate, mod = self.mod_of[p]
            if any(c == crate and mod[:len(m)] == m for c, m in prefixes):
                self.test_files.add(p)

    # -- resolution -----------------------------------------------------------------------------

    def scope_chain(self, p, scope):
        """Scopes whose names are visible in `scope` of file p: the scope and its enclosing inline
        modules (test modules reach them through `use super::*`)."""
        return [scope[:k] for k in range(len(scope), -1, -1)]

    def absolute(self, p, scope, segs):
        """Absolute module path (within p's crate) of a path written in `scope` of file p, or None
        for an external one."""
        crate, mod = self.mod_of[p]
        here = mod + scope
        if not segs or segs[0] == "::":
            return None
        first = segs[0]
        if first in ("crate", "$crate"):
            return tuple(segs[1:])
        if first in ("self", "super"):
            base, k = here, 0
            if first == "self":
                k = 1
            while k < len(segs) and segs[k] == "super":
                base = base[:-1]
                k += 1
            return base + tuple(segs[k:])
        f = self.files[p]
        for s in self.scope_chain(p, scope):
            if first in f.scopes.get(s, {}).get("children", ()):
                return mod + s + tuple(segs)
            alias = self.aliases.get((p, s), {}).get(first)
            if alias is not None:
                return alias + tuple(segs[1:])
        return None

    def lookup(self, crate, segs, depth=0):
        """(file, rest, via) of an absolute path: the longest module path that is a file, then
        through that file's imports while the next name is one it only imports."""
        segs = tuple(segs)
        k = len(segs)
        while k >= 0 and (crate, segs[:k]) not in self.by_mod:
            k -= 1
        if k < 0:
            return None, segs, []
        p = self.by_mod[(crate, segs[:k])]
        rest = segs[k:]
        if not rest or depth > 8 or rest[0] in ("*", "self"):
            return p, rest, []
        name = rest[0]
        f = self.files[p]
        if name in f.defs or name in f.scopes[()]["children"]:
            return p, rest, []
        imp = self.file_imports.get(p, {}).get(name)
        if imp is not None:
            target, line = imp
            q, rest2, via = self.lookup(crate, target + rest[1:], depth + 1)
            if q is not None:
                return q, rest2, [(p, line)] + via
        for target, line in self.file_globs.get(p, []):
            q, r, _ = self.lookup(crate, target, depth + 1)
            if q is None or r:
                continue
            g = self.files[q]
            if name in g.defs or name in self.file_imports.get(q, {}):
                q2, rest2, via = self.lookup(crate, target + rest, depth + 1)
                if q2 is not None:
                    return q2, rest2, [(p, line)] + via
        return p, rest, []

    def resolve_all(self):
        # aliases: names brought in by `use` (per file and inline scope), as absolute paths
        self.aliases = {}
        self.file_imports = {}  # file -> {name: (absolute path, line)} at its top level
        self.file_globs = {}  # file -> [(absolute module path, line)]
        pending = []
        for p, f in self.files.items():
            for u in f.uses:
                for segs, alias, line in u["leaves"]:
                    pending.append((p, u, segs, alias, line))
        # relative `use` paths may start with a name another `use` brings in: settle in rounds
        resolved = {}
        for _ in range(4):
            for item in pending:
                p, u, segs, alias, line = item
                if id(item) in resolved:
                    continue
                a = self.absolute(p, u["scope"], segs)
                if a is None:
                    continue
                resolved[id(item)] = a
                if a and a[-1] == "self":
                    a = a[:-1]
                if a and a[-1] == "*":
                    if u["module_level"] and not u["scope"]:
                        self.file_globs.setdefault(p, []).append((a[:-1], line))
                    continue
                name = alias or (a[-1] if a else None)
                if name and name != "_":
                    self.aliases.setdefault((p, u["scope"]), {})[name] = a
                    if u["module_level"] and not u["scope"]:
                        self.file_imports.setdefault(p, {})[name] = (a, line)
        # edges
        self.edges = {}  # (src, dst) -> list of occurrence dicts
        for item in pending:
            p, u, segs, alias, line = item
            a = resolved.get(id(item))
            if a is None:
                continue
            if a and a[-1] == "self":
                a = a[:-1]
            crate = self.mod_of[p][0]
            q, rest, via = self.lookup(crate, a)
            if q is None or not rest and not via:
                continue  # a module named, not used: its uses make the edges
            self.add_edge(p, q, line, u["test"], "use", via, u["line"])
        for p, f in self.files.items():
            crate = self.mod_of[p][0]
            for r in f.refs:
                a = self.absolute(p, r["scope"], r["segs"])
                if a is None:
                    continue
                q, rest, via = self.lookup(crate, a)
                if q is None:
                    continue
                self.add_edge(p, q, r["line"], r["test"], "path", via)

    def add_edge(self, p, q, line, test, kind, via, use_line=None):
        if p == q:
            return
        test = test or p in self.test_files
        occ = {
            "line": line,
            "text": self.files[p].src_line(line),
            "test": test,
            "kind": kind,
            "via": ["%s:%d" % v for v in via],
        }
        if use_line is not None and use_line != line:
            occ["use_line"] = use_line
        lst = self.edges.setdefault((p, q), [])
        if occ not in lst:  # one entry per line, however many names it imports
            lst.append(occ)

    def related(self, a, b):
        """True when one file's module is an ancestor of the other's (same crate)."""
        (ca, ma), (cb, mb) = self.mod_of[a], self.mod_of[b]
        if ca != cb:
            return False
        return ma[:len(mb)] == mb or mb[:len(ma)] == ma

    # -- measures ---------------------------------------------------------------------------------

    def file_sizes(self):
        rows = [(f.text.count("\n"), p) for p, f in self.files.items()]
        rows.sort(key=lambda r: (-r[0], r[1]))
        return [{"path": p, "lines": n, "over": n > FILE_LIMIT} for n, p in rows]

    def functions(self):
        out = []
        for p, f in self.files.items():
            for fn in f.fns:
                out.append({
                    "path": p,
                    "line": fn["line"],
                    "end": fn["end"],
                    "lines": fn["lines"],
                    "name": fn["name"],
                    "qual": fn["qual"],
                    "nested_in": fn["nested_in"],
                    "test": fn["test"] or p in self.test_files,
                })
        out.sort(key=lambda r: (-r["lines"], r["path"], r["line"]))
        return out

    def graph(self, with_tests):
        g = {p: set() for p in self.files}
        for (a, b), occ in self.edges.items():
            if with_tests or any(not o["test"] for o in occ):
                g[a].add(b)
        return g

    def attack_kind_tests(self):
        out = []
        regs = {os.path.normpath(r) for r in self.registry.split(",")} if self.registry else set()
        for p, f in sorted(self.files.items()):
            if os.path.normpath(p) in regs:
                continue
            toks, pairs = f.toks, f.pairs
            # innermost open delimiter of each token
            enclosing, stack = [None] * len(toks), []
            for i, t in enumerate(toks):
                if t.k == "p" and t.v in ")]}" and stack:
                    stack.pop()
                enclosing[i] = stack[-1] if stack else None
                if t.k == "p" and t.v in "([{" and i in pairs:
                    stack.append(i)
            for i, t in enumerate(toks):
                if not (t.k == "id" and t.v == "AttackKind" and is_p(toks, i + 1, "::") and is_id(toks, i + 2)):
                    continue
                start = i
                while is_p(toks, start - 1, "::") and is_id(toks, start - 2):
                    start -= 2
                end = i + 2
                how = None
                if is_p(toks, start - 1, "==") or is_p(toks, end + 1, "=="):
                    how = "=="
                elif is_p(toks, start - 1, "!=") or is_p(toks, end + 1, "!="):
                    how = "!="
                elif i in f.matches_patterns:
                    how = "match arm"
                else:
                    o = enclosing[i]
                    while o is not None and toks[o].v != "{":
                        if toks[o].v == "(" and is_p(toks, o - 1, "!") and is_id(toks, o - 2, "matches"):
                            how = "matches!"
                            break
                        o = enclosing[o]
                if how is None:
                    continue
                test = p in self.test_files or self.in_test_code(f, i)
                out.append({
                    "path": p,
                    "line": t.line,
                    "how": how,
                    "variant": toks[i + 2].v,
                    "test": test,
                    "text": f.src_line(t.line),
                })
        return out

    def in_test_code(self, f, i):
        if f.tok_test[i]:
            return True
        line = f.toks[i].line
        return any(fn["test"] and fn["line"] <= line <= fn["end"] for fn in f.fns)


# ----------------------------------------------------------------------------------------------
# Cycles


def tarjan(graph):
    index, low, on, stack, comps = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        # iterative Tarjan: (node, iterator over successors)
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def shortest_cycle(graph, comp):
    """A shortest cycle through the component's first file, as a list of files (first repeated)."""
    members = set(comp)
    start = comp[0]
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w not in members:
                    continue
                if w == start:
                    chain = [v]
                    while prev[chain[-1]] is not None:
                        chain.append(prev[chain[-1]])
                    chain.reverse()
                    return chain + [start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


def cycles(tree, with_tests):
    g = tree.graph(with_tests)
    out = []
    for comp in tarjan(g):
        if len(comp) < 2:
            continue
        members = set(comp)
        edges = []
        for a in comp:
            for b in sorted(g[a]):
                if b in members:
                    occ = [o for o in tree.edges[(a, b)] if with_tests or not o["test"]]
                    edges.append({"from": a, "to": b, "parent_child": tree.related(a, b), "at": occ})
        out.append({"files": comp, "example": shortest_cycle(g, comp), "edges": edges})
    return out


def parent_child_cycles(tree, with_tests):
    g = tree.graph(with_tests)
    out = []
    for a in sorted(g):
        for b in sorted(g[a]):
            if a < b and a in g[b] and tree.related(a, b):
                out.append({
                    "files": [a, b],
                    "at": {
                        a + " -> " + b: [o for o in tree.edges[(a, b)] if with_tests or not o["test"]],
                        b + " -> " + a: [o for o in tree.edges[(b, a)] if with_tests or not o["test"]],
                    },
                })
    return out


def cycles_without_parent_child(tree, with_tests):
    g = tree.graph(with_tests)
    h = {a: {b for b in bs if not tree.related(a, b)} for a, bs in g.items()}
    return [c for c in tarjan(h) if len(c) > 1]


# ----------------------------------------------------------------------------------------------
# Report


def measure(sources, registry):
    tree = Tree(sources, registry)
    files = tree.file_sizes()
    fns = tree.functions()
    prod = cycles(tree, with_tests=False)
    allc = cycles(tree, with_tests=True)
    kept = cycles_without_parent_child(tree, False)
    for c in prod:
        c["parent_child_only"] = not any(set(k) <= set(c["files"]) for k in kept)
    prod_sets = [set(c["files"]) for c in prod]
    test_only = [c for c in allc if set(c["files"]) not in prod_sets]
    g_prod, g_all = tree.graph(False), tree.graph(True)
    test_only_edges = [
        {"from": a, "to": b, "at": tree.edges[(a, b)]}
        for a in sorted(g_all) for b in sorted(g_all[a]) if b not in g_prod[a]
    ]
    ak = tree.attack_kind_tests()
    result = {
        "limits": {"file_lines": FILE_LIMIT, "fn_lines": FN_LIMIT},
        "files": files,
        "files_total": sum(r["lines"] for r in files),
        "files_over": [r for r in files if r["over"]],
        "functions": {
            "count": len(fns),
            "test_count": sum(1 for r in fns if r["test"]),
            "longest": fns[:15],
            "over": [r for r in fns if r["lines"] > FN_LIMIT and not r["test"]],
            "test_over": [r for r in fns if r["lines"] > FN_LIMIT and r["test"]],
        },
        "imports": {
            "files": len(tree.files),
            "edges": sum(len(v) for v in g_prod.values()),
            "edges_with_tests": sum(len(v) for v in g_all.values()),
            "test_files": sorted(tree.test_files),
            "cycles": prod,
            "parent_child_cycles": parent_child_cycles(tree, False),
            "cycles_without_parent_child_edges": kept,
            "cycles_with_tests_only": test_only,
            "parent_child_cycles_with_tests": parent_child_cycles(tree, True),
            "test_only_edges": test_only_edges,
            "graph": {a: sorted(bs) for a, bs in g_prod.items()},
        },
        "attack_kind_tests": {
            "registry": registry,
            "registry_exists": all(r in sources for r in registry.split(",")),
            "count": len(ak),
            "lines": len({(r["path"], r["line"]) for r in ak}),
            "test_count": sum(1 for r in ak if r["test"]),
            "occurrences": ak,
        },
    }
    result["violations"] = violations(result)
    return result


def violations(r):
    v = []
    for f in r["files_over"]:
        v.append("file over %d lines: %s (%d)" % (FILE_LIMIT, f["path"], f["lines"]))
    for f in r["functions"]["over"]:
        v.append("function over %d lines: %s:%d %s (%d)" % (FN_LIMIT, f["path"], f["line"], f["qual"], f["lines"]))
    for c in r["imports"]["cycles"]:
        v.append("import cycle of %d files: %s" % (len(c["files"]), " -> ".join(c["example"])))
    return v


def fmt_occ(o):
    s = "%d" % o["line"]
    tags = []
    if o["test"]:
        tags.append("test")
    if o.get("use_line"):
        tags.append("in the use at line %d" % o["use_line"])
    if o["via"]:
        tags.append("via " + ", ".join(o["via"]))
    return "%s%s  %s" % (s, " [" + "; ".join(tags) + "]" if tags else "", o["text"][:110])


def print_edges(edges, indent="      ", limit=4):
    for e in edges:
        pc = "  (parent<->child)" if e.get("parent_child") else ""
        print("%s%s -> %s%s" % (indent, e["from"], e["to"], pc))
        for o in e["at"][:limit]:
            print("%s    %s:%s" % (indent, e["from"], fmt_occ(o)))
        if len(e["at"]) > limit:
            print("%s    ... and %d more" % (indent, len(e["at"]) - limit))


def print_human(r, label):
    print("shape of %s" % label)
    print()
    print("== Files in src/ (wc -l), limit %d ==" % FILE_LIMIT)
    for f in r["files"]:
        print("%7d  %s%s" % (f["lines"], f["path"], "   OVER" if f["over"] else ""))
    print("%7d  total (%d files); over %d: %d" % (r["files_total"], len(r["files"]), FILE_LIMIT, len(r["files_over"])))
    print()
    fn = r["functions"]
    print("== Functions: %d (%d in test code), limit %d for non-test code ==" % (fn["count"], fn["test_count"], FN_LIMIT))
    print("Longest 15:")
    for f in fn["longest"]:
        flags = []
        if f["test"]:
            flags.append("test code")
        if f["nested_in"]:
            flags.append("nested in " + f["nested_in"])
        if f["lines"] > FN_LIMIT and not f["test"]:
            flags.append("OVER")
        print("%6d  %-40s %s%s" % (f["lines"], "%s:%d" % (f["path"], f["line"]), f["qual"],
                                  "   " + ", ".join(flags) if flags else ""))
    print("Non-test functions over %d: %d" % (FN_LIMIT, len(fn["over"])))
    for f in fn["over"]:
        print("%6d  %s:%d %s" % (f["lines"], f["path"], f["line"], f["qual"]))
    print("Test-code functions over %d (information, not a limit): %d" % (FN_LIMIT, len(fn["test_over"])))
    for f in fn["test_over"]:
        print("%6d  %s:%d %s" % (f["lines"], f["path"], f["line"], f["qual"]))
    print()
    im = r["imports"]
    print("== Import graph: %d files, %d edges in non-test code (%d with #[cfg(test)] code) ==" % (
        im["files"], im["edges"], im["edges_with_tests"]))
    print("Import cycles (strongly connected components of > 1 file, non-test code): %d" % len(im["cycles"]))
    for k, c in enumerate(im["cycles"], 1):
        only = "  [only through parent<->child edges]" if c["parent_child_only"] else ""
        print("  cycle %d: %d files: %s%s" % (k, len(c["files"]), ", ".join(c["files"]), only))
        print("    example: %s" % " -> ".join(c["example"]))
        print("    edges inside it, with the lines that make them:")
        print_edges(c["edges"])
    print("Parent<->child cycles (a file and its ancestor using each other; counted above): %d" % len(im["parent_child_cycles"]))
    for c in im["parent_child_cycles"]:
        print("  %s <-> %s" % tuple(c["files"]))
        for k, occ in c["at"].items():
            print("      %s" % k)
            for o in occ[:4]:
                print("          %s" % fmt_occ(o))
    wo = im["cycles_without_parent_child_edges"]
    print("Cycles left when parent<->child edges are dropped: %d%s" % (
        len(wo), "".join("\n  " + ", ".join(c) for c in wo)))
    print("Cycles that appear only when #[cfg(test)] code is counted (information): %d" % len(im["cycles_with_tests_only"]))
    for c in im["cycles_with_tests_only"]:
        print("  %d files: %s" % (len(c["files"]), ", ".join(c["files"])))
        print("    example: %s" % " -> ".join(c["example"]))
    print("Edges made only by test code: %d" % len(im["test_only_edges"]))
    print_edges(im["test_only_edges"], indent="  ", limit=2)
    print()
    ak = r["attack_kind_tests"]
    print("== Attack-name tests outside %s%s: %d (on %d lines; %d in test code) ==" % (
        ak["registry"], "" if ak["registry_exists"] else " (absent)", ak["count"], ak["lines"], ak["test_count"]))
    for o in ak["occurrences"]:
        print("  %-36s %-9s %s%s" % ("%s:%d" % (o["path"], o["line"]), o["how"],
                                     "[test] " if o["test"] else "", o["text"][:100]))
    print()
    print("== Limits: %s ==" % ("all kept" if not r["violations"] else "%d broken" % len(r["violations"])))
    for v in r["violations"]:
        print("  " + v)


# ----------------------------------------------------------------------------------------------
# Sources


def read_worktree(root):
    out = {}
    src = os.path.join(root, "src")
    for d, dirs, files in os.walk(src):
        dirs.sort()
        for name in files:
            if name.endswith(".rs"):
                full = os.path.join(d, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                try:
                    with open(full, encoding="utf-8", errors="replace") as fh:
                        out[rel] = fh.read()
                except FileNotFoundError:  # removed while the tree was read
                    pass
    return out


def read_rev(root, rev):
    names = subprocess.run(
        ["git", "-C", root, "ls-tree", "-r", "--name-only", rev, "--", "src"],
        check=True, capture_output=True, text=True,
    ).stdout.split("\n")
    out = {}
    for name in names:
        if name.endswith(".rs"):
            out[name] = subprocess.run(
                ["git", "-C", root, "show", "%s:%s" % (rev, name)],
                check=True, capture_output=True,
            ).stdout.decode("utf-8", "replace")
    return out


# ----------------------------------------------------------------------------------------------
# Self-test

SELF_TEST_FN = r'''
/* outer /* inner */ fn fake() { } still a comment */
fn raw() {
    let s = r#"}{ "fn x() {" "#;
    let t = r"}";
    let b = br##"{"#}"##;
    let e = "\"{ fn y() {";
    let bs = b"}";
}
fn chars() {
    let c = '{';
    let d = '}';
    let q = '\'';
    let u = '\u{7b}';
    let bc = b'{';
}
fn lifetimes<'a, 'b: 'a>(x: &'a str, _y: &'b str) -> &'a str {
    'outer: loop { break 'outer; }
    x
}
// fn commented() {
/// fn documented() {
fn outer() {
    fn inner(v: [u8; 2]) -> u8 {
        v[0]
    }
    let f = |x: u8| { x + 1 };
    f(inner([1, 2]));
}
trait T {
    fn declared(&self);
    fn default_method(&self) {
    }
}
impl<'a> T for Wrapper<'a> {
    fn declared(&self) {}
}
#[cfg(test)]
mod tests {
    #[test]
    fn a_test() {
    }
}
'''


def self_test():
    failures = []

    def check(what, got, want):
        if got != want:
            failures.append("%s: got %r, want %r" % (what, got, want))

    f = FileInfo("src/x.rs", SELF_TEST_FN)
    fns = {(fn["qual"], fn["line"]): (fn["lines"], fn["test"]) for fn in f.fns}
    check("functions found", sorted(fns), sorted([
        ("raw", 3), ("chars", 10), ("lifetimes", 17), ("outer", 23), ("inner", 24),
        ("T::default_method", 32), ("Wrapper::declared", 36), ("a_test", 41),
    ]))
    check("raw strings with braces", fns.get(("raw", 3)), (7, False))
    check("char literals", fns.get(("chars", 10)), (7, False))
    check("lifetimes and labels", fns.get(("lifetimes", 17)), (4, False))
    check("outer fn with nested fn and closure", fns.get(("outer", 23)), (7, False))
    check("nested fn", fns.get(("inner", 24)), (3, False))
    check("trait default method", fns.get(("T::default_method", 32)), (2, False))
    check("fn in #[cfg(test)] mod", fns.get(("a_test", 41)), (2, True))
    check("lifetime tokens", [t.v for t in lex("fn f<'a>(x: &'a u8) -> char { 'x' }") if t.k in ("lt", "lit")],
          ["'a", "'a", "'x'"])

    sources = {
        "src/lib.rs": "pub mod a;\npub mod b;\nmod c;\npub mod t;\npub use b::Thing;\n",
        "src/a/mod.rs": "pub mod inner;\nuse crate::{\n    b::{self as bee, Other},\n    c::{helper,\n        deep::{Deep}},\n};\npub fn f() { inner::g(); }\n",
        "src/a/inner.rs": "use super::f;\npub fn g() {}\n",
        "src/b.rs": "pub struct Thing;\npub struct Other;\npub fn h() { crate::a::f(); }\n"
                    "#[cfg(test)]\nmod tests {\n    use super::*;\n    fn t() { crate::c::helper(); }\n}\n",
        "src/c/mod.rs": "pub mod deep;\npub fn helper() { let s = \"crate::a::f()\"; }\n"
                        "pub fn kinds(k: AttackKind) -> bool {\n    if k == AttackKind::A { return true; }\n"
                        "    match k {\n        AttackKind::B | AttackKind::C => matches!(k, AttackKind::D),\n"
                        "        _ => k != AttackKind::E,\n    }\n}\n"
                        "#[cfg(test)]\nmod tests {\n    use crate::b::Other;\n    fn k(x: u8) -> bool { matches!(x, AttackKind::F) }\n}\n",
        "src/c/deep.rs": "pub struct Deep;\nuse crate::Thing;\n",
        "src/t.rs": "pub fn uses() -> AttackKind { AttackKind::A }\n",
        "src/bin/tool/main.rs": "mod args;\nuse leakscope::a::f;\nfn main() { args::parse(); }\n",
        "src/bin/tool/args.rs": "pub fn parse() { crate::main(); }\n",
    }
    tree = Tree(sources, registry="src/t.rs")
    e = {k: [o["line"] for o in v] for k, v in tree.edges.items()}
    check("multi-line use: b::Other", e.get(("src/a/mod.rs", "src/b.rs")), [3])
    check("multi-line use: c::helper", e.get(("src/a/mod.rs", "src/c/mod.rs")), [4])
    check("multi-line use: c::deep::Deep", e.get(("src/a/mod.rs", "src/c/deep.rs")), [5])
    check("child module path in code", e.get(("src/a/mod.rs", "src/a/inner.rs")), [7])
    check("child uses parent", e.get(("src/a/inner.rs", "src/a/mod.rs")), [1])
    check("re-export followed", e.get(("src/c/deep.rs", "src/b.rs")), [2])
    check("no edge to the facade", ("src/c/deep.rs", "src/lib.rs") in tree.edges, False)
    check("facade's own edge", e.get(("src/lib.rs", "src/b.rs")), [5])
    check("path in a string is not an edge", e.get(("src/c/mod.rs", "src/a/mod.rs")), None)
    check("test edge marked", [o["test"] for o in tree.edges.get(("src/b.rs", "src/c/mod.rs"), [])], [True])
    check("binary's crate:: paths", e.get(("src/bin/tool/args.rs", "src/bin/tool/main.rs")), [1])
    check("binary's child path", e.get(("src/bin/tool/main.rs", "src/bin/tool/args.rs")), [3])
    check("binary's leakscope:: is external", [k for k in tree.edges if k[0].startswith("src/bin") and not k[1].startswith("src/bin")], [])
    cyc = [c["files"] for c in cycles(tree, False)]
    check("cycles", cyc, [["src/a/inner.rs", "src/a/mod.rs", "src/b.rs", "src/c/deep.rs"],
                         ["src/bin/tool/args.rs", "src/bin/tool/main.rs"]])
    check("parent<->child pairs", [c["files"] for c in parent_child_cycles(tree, False)],
          [["src/a/inner.rs", "src/a/mod.rs"], ["src/bin/tool/args.rs", "src/bin/tool/main.rs"]])
    check("test-only cycle", [c["files"] for c in cycles(tree, True)][0],
          ["src/a/inner.rs", "src/a/mod.rs", "src/b.rs", "src/c/deep.rs", "src/c/mod.rs"])
    ak = [(o["line"], o["how"], o["variant"], o["test"]) for o in tree.attack_kind_tests()]
    check("attack-name tests", ak, [(4, "==", "A", False), (6, "match arm", "B", False), (6, "match arm", "C", False),
                                    (6, "matches!", "D", False), (7, "!=", "E", False), (13, "matches!", "F", True)])
    if failures:
        for x in failures:
            print("FAIL " + x)
        print("self-test: %d failed" % len(failures))
        return 1
    print("self-test: ok")
    return 0


# ----------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--check", action="store_true", help="exit 1 if a limit is broken, saying which")
    ap.add_argument(
        "--registry",
        default="src/attack/registry.rs,src/attack/spec.rs",
        help="the registry's files (comma-separated), whose AttackKind tests are allowed",
    )
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="repository root (default: this script's repository)")
    ap.add_argument("--rev", help="measure this git revision instead of the working tree")
    ap.add_argument("--self-test", action="store_true", help="run the embedded cases")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    sources = read_rev(a.root, a.rev) if a.rev else read_worktree(a.root)
    registry = []
    for one in a.registry.split(","):
        one = one.replace(os.sep, "/")
        if os.path.isabs(one):
            one = os.path.relpath(one, a.root).replace(os.sep, "/")
        registry.append(os.path.normpath(one))
    r = measure(sources, ",".join(registry))
    label = "%s at %s" % (a.root, a.rev) if a.rev else "%s (working tree)" % a.root
    if a.json:
        r["source"] = label
        print(json.dumps(r, indent=1))
    elif a.check:
        for v in r["violations"]:
            print(v)
        if not r["violations"]:
            print("shape: all limits kept")
    else:
        print_human(r, label)
    return 1 if a.check and r["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
