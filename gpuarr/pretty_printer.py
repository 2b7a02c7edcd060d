"""A small document layout engine of the kind JAX's jaxpr printer uses (Wadler-Lindig).

Documents are made of text, breaks, nesting and groups. A group prints flat (each break as its
text) when its own flat text fits in what is left of the line; the text after the group does
not count. Otherwise the group's breaks start new lines, indented by the nesting around them.
`gpuarr.core` builds jaxpr documents from these and lays them out with `render`.
"""
from __future__ import annotations

WIDTH = 80
_TEXT, _BREAK, _GROUP, _NEST, _CONCAT, _LINE = range(6)


def text(s: str, note: str | None = None):
    return (_TEXT, s, note)  # a note (source location) is written at the end of its line


def brk(s: str = " "):
    return (_BREAK, s)


NIL = (_CONCAT, ())


def group(doc):
    return (_GROUP, doc)


def nest(n: int, doc):
    return (_NEST, n, doc)


def concat(*docs):
    return (_CONCAT, docs)


def line(text: str, note: str | None, full):
    """A group known to print as `text` when flat; `full()` builds the group's content."""
    return (_LINE, text, note, full)


def join(sep, docs):
    """`docs` with `sep` between each two."""
    out = []
    for d in docs:
        if out:
            out.append(sep)
        out.append(d)
    return (_CONCAT, out)


def _flat(doc, room):
    """`doc` on one line, as (texts, notes), or None when it takes more than `room` columns."""
    texts: list[str] = []
    notes: list[str] = []
    stack = [doc]
    while stack:
        d = stack.pop()
        tag = d[0]
        if tag == _TEXT or tag == _BREAK or tag == _LINE:
            room -= len(d[1])
            if room < 0:
                return None
            texts.append(d[1])
            if tag != _BREAK and d[2] is not None:
                notes.append(d[2])
        elif tag == _CONCAT:
            stack.extend(reversed(d[1]))
        elif tag == _GROUP:
            stack.append(d[1])
        else:
            stack.append(d[2])  # a nest
    return texts, notes


def render(doc, indent: int = 0, width: float = WIDTH) -> str:
    """Lay `doc` out from column `indent`; lines after the first start with their indentation.

    Outside a flat group every break starts a line, so the walk needs no mode: a group that
    fits is written out whole, one that does not is walked with its breaks as newlines (the
    groups inside it deciding for themselves).
    """
    lines: list[str] = []
    current: list[str] = []
    notes: list[str] = []
    k = indent
    stack = [(indent, doc)]
    while stack:
        i, d = stack.pop()
        tag = d[0]
        if tag == _TEXT:
            current.append(d[1])
            k += len(d[1])
            if d[2] is not None:
                notes.append(d[2])
        elif tag == _BREAK:
            lines.append("".join(current) + "".join(f"  # {n}" for n in notes))
            current, notes, k = [" " * i], [], i
        elif tag == _CONCAT:
            stack.extend([(i, c) for c in reversed(d[1])])
        elif tag == _NEST:
            stack.append((i + d[1], d[2]))
        elif tag == _LINE:
            if len(d[1]) <= width - k:
                stack.append((i, text(d[1], d[2])))
            else:
                stack.append((i, d[3]()))
        else:
            flat = _flat(d[1], width - k)
            if flat is None:
                stack.append((i, d[1]))
            else:
                current.extend(flat[0])
                notes.extend(flat[1])
                k += sum(map(len, flat[0]))
    lines.append("".join(current) + "".join(f"  # {n}" for n in notes))
    return "\n".join(lines)
