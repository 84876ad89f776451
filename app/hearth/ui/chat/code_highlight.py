"""A small line-by-line syntax highlighter for code blocks (plain Python, no Qt).

Good enough for chat: keywords, strings, comments, numbers, builtins and function
calls for common languages. Each line is tokenized on its own with a carried state,
so a streaming code block is highlighted one finished line at a time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

# Span kinds: keyword, builtin, string, comment, number, function.
Span = tuple[int, int, str]  # start, length, kind


def _words(text: str) -> list[str]:
    return text.split()


_C_LIKE = _words("""break case catch class const continue default do else enum export extends false
finally for if import in new null return static struct super switch this throw true try
typeof var void while""")


@dataclass(frozen=True)
class Lang:
    keywords: frozenset[str]
    builtins: frozenset[str] = frozenset()
    line_comments: tuple[str, ...] = ("//",)
    block_comment: tuple[str, str] | None = ("/*", "*/")
    triple_quotes: bool = False
    backticks: bool = False  # template strings (JS)


def _lang(words: str, builtins: str = "", **kw: object) -> Lang:
    return Lang(frozenset(words.split()), frozenset(builtins.split()), **kw)  # type: ignore[arg-type]


PYTHON = _lang(
    "False None True and as assert async await break class continue def del elif else except"
    " finally for from global if import in is lambda nonlocal not or pass raise return try"
    " while with yield match case self",
    "print len range str int float list dict set tuple bool open isinstance super type"
    " enumerate zip map filter sorted min max sum any all repr Exception ValueError",
    line_comments=("#",),
    block_comment=None,
    triple_quotes=True,
)
JS = _lang(
    " ".join(_C_LIKE) + " let function async await of yield interface type implements"
    " undefined instanceof delete from as readonly public private protected",
    "console Math JSON Promise Array Object String Number document window require",
    backticks=True,
)
C_FAMILY = _lang(
    " ".join(_C_LIKE) + " int long short char float double unsigned signed bool auto"
    " sizeof typedef union extern register volatile inline goto namespace template"
    " typename using virtual override public private protected final abstract package"
    " interface implements throws boolean byte fn let mut impl trait pub use mod match"
    " where loop self Self crate dyn move ref func go defer chan map range type var"
    " nil string",
    "printf std vec Vec String Option Some None Ok Err Result println fmt System",
)
SHELL = _lang(
    "if then else elif fi for while do done case esac in function return export local"
    " echo cd exit set unset source",
    "ls grep sed awk cat curl pip python git sudo apt make",
    line_comments=("#",),
    block_comment=None,
)
SQL = _lang(
    " ".join(
        w.upper() + " " + w
        for w in _words(
            "select from where insert into values update set delete create table"
            " index join left right inner outer on group by order having limit as and or not"
            " null primary key references distinct union all case when then else end"
        )
    ),
    line_comments=("--",),
)
JSON_LANG = _lang("true false null", line_comments=(), block_comment=None)
GENERIC = _lang(" ".join(_C_LIKE), line_comments=("//", "#"))

_ALIASES = {
    "python": PYTHON, "py": PYTHON, "python3": PYTHON,
    "js": JS, "javascript": JS, "ts": JS, "typescript": JS, "jsx": JS, "tsx": JS,
    "c": C_FAMILY, "cpp": C_FAMILY, "c++": C_FAMILY, "h": C_FAMILY, "java": C_FAMILY,
    "rust": C_FAMILY, "rs": C_FAMILY, "go": C_FAMILY, "csharp": C_FAMILY, "cs": C_FAMILY,
    "kotlin": C_FAMILY, "swift": C_FAMILY,
    "sh": SHELL, "bash": SHELL, "shell": SHELL, "zsh": SHELL, "console": SHELL,
    "sql": SQL, "json": JSON_LANG,
}  # fmt: skip


def language(name: str) -> Lang:
    return _ALIASES.get(name.lower(), GENERIC)


@cache
def _token_re(lang: Lang) -> re.Pattern[str]:
    parts = []
    if lang.line_comments:
        parts.append("(?P<comment>(?:" + "|".join(map(re.escape, lang.line_comments)) + ").*)")
    if lang.block_comment:
        parts.append("(?P<block>" + re.escape(lang.block_comment[0]) + ")")
    if lang.triple_quotes:
        parts.append("(?P<triple>\"\"\"|''')")
    quotes = "\"'`" if lang.backticks else "\"'"
    for q in quotes:
        parts.append(f"(?P<s{ord(q)}>{q}(?:[^{q}\\\\]|\\\\.)*(?:{q}|$))")
    parts.append(r"(?P<number>\b(?:0[xX][0-9a-fA-F]+|\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?)\b)")
    parts.append(r"(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P<call>\s*\()?")
    return re.compile("|".join(parts))


def highlight_line(
    line: str, lang: Lang, state: str | None = None
) -> tuple[list[Span], str | None]:
    """Spans for ``line`` and the state for the next line (inside a comment/string)."""
    spans: list[Span] = []
    pos = 0
    if state is not None:  # continue a block comment or a triple-quoted string
        end = line.find(state)
        if end < 0:
            return (
                [(0, len(line), "string" if state != _end_comment(lang) else "comment")]
                if line
                else [],
                state,
            )
        stop = end + len(state)
        spans.append((0, stop, "string" if state != _end_comment(lang) else "comment"))
        pos, state = stop, None
    pattern = _token_re(lang)
    while pos < len(line):
        m = pattern.search(line, pos)
        if m is None:
            break
        kind = m.lastgroup or ""
        start = m.start()
        if kind == "comment":
            spans.append((start, len(line) - start, "comment"))
            break
        if kind in ("block", "triple"):
            opener = m.group(kind)
            closer = _end_comment(lang) if kind == "block" else opener
            end = line.find(closer, m.end())
            if end < 0:
                spans.append((start, len(line) - start, "comment" if kind == "block" else "string"))
                return spans, closer
            stop = end + len(closer)
            spans.append((start, stop - start, "comment" if kind == "block" else "string"))
            pos = stop
            continue
        if kind.startswith("s") and kind != "s":
            spans.append((start, m.end() - start, "string"))
        elif kind == "number":
            spans.append((start, m.end() - start, "number"))
        elif m.group("word") is not None:
            word = m.group("word")
            if word in lang.keywords:
                spans.append((start, len(word), "keyword"))
            elif word in lang.builtins:
                spans.append((start, len(word), "builtin"))
            elif m.group("call") is not None:
                spans.append((start, len(word), "function"))
        pos = m.end()
    return spans, state


def _end_comment(lang: Lang) -> str:
    return lang.block_comment[1] if lang.block_comment else "\0"
