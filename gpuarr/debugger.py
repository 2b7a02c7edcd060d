"""`jax.debug.breakpoint`: an interactive prompt, `(jdb)`, with the run-time values of the
caller's local variables, from eager code or from inside jit, vmap and grad.

`breakpoint()` collects the Python frames above it (the gpuarr package's own left out) and
hands their traced local variables to `debug.callback` as arguments; the other locals are
kept as they are. When the callback runs, each frame's locals hold concrete values again and
the debugger chosen by `backend` (the text one, "cli", unless others are registered) takes
commands: `p expr`, `pp expr`, a bare expression, `u`/`d` to move between frames, `l`, `ll`,
`w`/`bt`, `c` to continue and `q` to quit. Extra keyword arguments go to the debugger (the text
one takes `stdin` and `stdout`).
"""
from __future__ import annotations

import cmd
import dataclasses
import inspect
import os
import pprint
import sys
import threading
import traceback
from typing import Any

from gpuarr import core, pytrees

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


@dataclasses.dataclass(frozen=True)
class DebuggerFrame:
    """One Python frame as the debugger shows it: file, line, source and variables. A pytree
    whose leaves are the traced values among its variables (so they arrive concrete)."""

    filename: str
    locals: dict
    globals: dict
    code_context: Any
    source: list
    lineno: int
    offset: int | None

    @classmethod
    def from_frameinfo(cls, info) -> DebuggerFrame:
        try:
            _, start = inspect.getsourcelines(info.frame)
            source = inspect.getsource(info.frame).split("\n")  # as JAX lists it
            offset = info.lineno - max(start, 1)
            if offset >= len(source):  # code from eval() has no usable source
                source, offset = [], None
        except (OSError, TypeError):
            source, offset = [], None
        return cls(info.filename, dict(info.frame.f_locals), {}, info.code_context, source,
                   info.lineno, offset)


def _flatten_frame(frame: DebuggerFrame):
    names = list(frame.locals)
    values = [frame.locals[n] for n in names]
    traced = [isinstance(v, core.Tracer) for v in values]
    kept = [None if t else v for v, t in zip(values, traced)]
    leaves = [v for v, t in zip(values, traced) if t]
    static = (names, traced, kept, frame.filename, frame.code_context, tuple(frame.source),
              frame.lineno, frame.offset)
    return leaves, _Static(static)


def _unflatten_frame(static, leaves):
    names, traced, kept, filename, context, source, lineno, offset = static.value
    it = iter(leaves)
    values = [next(it) if t else v for v, t in zip(kept, traced)]
    return DebuggerFrame(filename, dict(zip(names, values)), {}, context, list(source), lineno,
                         offset)


class _Static:
    """Frame data kept out of the pytree leaves, compared by identity."""

    def __init__(self, value):
        self.value = value


pytrees.register_pytree_node(DebuggerFrame, _flatten_frame, _unflatten_frame)


class CliDebugger(cmd.Cmd):
    """The text debugger: reads commands at the `(jdb) ` prompt."""

    prompt = "(jdb) "

    def __init__(self, frames, thread_id, stdin=None, stdout=None, completekey="tab"):
        super().__init__(stdin=stdin, stdout=stdout, completekey=completekey)
        self.use_rawinput = stdin is None
        self.frames = frames
        self.frame_index = 0
        self.thread_id = thread_id
        self.intro = "Entering jdb:"

    def evaluate(self, expr):
        frame = self.frames[self.frame_index]
        return eval(expr, {}, {**frame.globals, **frame.locals})  # noqa: S307 - the user's own

    def _error_message(self):
        exc = sys.exc_info()[:2]
        print("***", traceback.format_exception_only(*exc)[-1].strip(), file=self.stdout)

    def default(self, line):
        """Evaluate an expression and print its repr."""
        self.do_p(line)

    def do_p(self, arg):
        """p expression
        Evaluate and print the value of an expression."""
        try:
            print(repr(self.evaluate(arg)), file=self.stdout)
        except Exception:  # noqa: BLE001 - reported at the prompt, as pdb does
            self._error_message()

    def do_pp(self, arg):
        """pp expression
        Evaluate and pretty-print the value of an expression."""
        try:
            print(pprint.pformat(self.evaluate(arg)), file=self.stdout)
        except Exception:  # noqa: BLE001
            self._error_message()

    def print_context(self, num_lines=2):
        frame = self.frames[self.frame_index]
        out = [f"> {frame.filename}({frame.lineno})"]
        if frame.offset is not None:
            for i, line in enumerate(frame.source):
                if frame.offset - 1 - num_lines <= i <= frame.offset + num_lines:
                    out.append(("->  " if i == frame.offset else "    ") + line)
        print("\n".join(out), file=self.stdout)

    def do_up(self, arg):
        """u(p)
        Move up a stack frame."""
        if self.frame_index == len(self.frames) - 1:
            print("At topmost frame.", file=self.stdout)
        else:
            self.frame_index += 1
        self.print_context()
    do_u = do_up

    def do_down(self, arg):
        """d(own)
        Move down a stack frame."""
        if self.frame_index == 0:
            print("At bottommost frame.", file=self.stdout)
        else:
            self.frame_index -= 1
        self.print_context()
    do_d = do_down

    def do_list(self, arg):
        """l(ist)
        List source code around the current line."""
        self.print_context(num_lines=5)
    do_l = do_list

    def do_ll(self, arg):
        """ll
        List the whole source of the current function."""
        frame = self.frames[self.frame_index]
        print("\n".join(("->  " if i == frame.offset else "    ") + line
                        for i, line in enumerate(frame.source)), file=self.stdout)
    do_longlist = do_ll

    def do_continue(self, arg):
        """c(ont(inue))
        Continue the program's execution."""
        return True
    do_c = do_cont = do_continue

    def do_quit(self, arg):
        """q(uit), exit
        Quit the debugger: the program exits."""
        sys.exit(0)
    do_q = do_EOF = do_exit = do_quit

    def do_where(self, arg):
        """w(here), bt
        Print a stack trace, the most recent frame last."""
        out = ["Traceback:"]
        for frame in self.frames[::-1]:
            out.append(f'  File "{frame.filename}", line {frame.lineno}')
            out.append(f"    {frame.source[frame.offset].strip()}" if frame.offset is not None
                       else "    <no source>")
        print("\n".join(out), file=self.stdout)
    do_w = do_bt = do_where

    def run(self):
        while True:
            try:
                self.cmdloop()
                break
            except KeyboardInterrupt:
                print("--KeyboardInterrupt--", file=self.stdout)


def _run_cli(frames, thread_id, **kwargs):
    CliDebugger(frames, thread_id, **kwargs).run()


_debuggers: dict[str, tuple[int, Any]] = {"cli": (-1, _run_cli)}
_lock = threading.Lock()


def register_debugger(name: str, debugger, priority: int) -> None:
    """Add a debugger backend: `debugger(frames, thread_id, **kwargs)`; the highest priority
    one is the default."""
    if name in _debuggers:
        raise ValueError(f'Debugger with name "{name}" already registered.')
    _debuggers[name] = (priority, debugger)


def get_debugger(backend: str | None = None):
    """The debugger registered as `backend`, or the highest-priority one."""
    if backend is not None and backend in _debuggers:
        return _debuggers[backend][1]
    return max(_debuggers.values(), key=lambda entry: entry[0])[1]


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,  # noqa: A001
               num_frames: int | None = None, ordered: bool = False, token=None, **kwargs):
    """Stop at this point of the program with an interactive debugger over the run-time values
    of the callers' variables (see the module doc); under jit it stops each time the compiled
    function runs. `filter_frames` leaves gpuarr's own frames out, `num_frames` keeps that many
    frames; with `token` (an array or pytree of arrays) the stop waits for that value and
    returns it unchanged."""
    from gpuarr import callbacks, debug
    from gpuarr.lax import lax
    if token is not None and ordered:
        raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
    infos = inspect.stack()[1:]
    if filter_frames:
        infos = [i for i in infos if not i.filename.startswith(_PKG_DIR)]
    frames = [DebuggerFrame.from_frameinfo(i) for i in infos]
    del infos
    if num_frames is not None:
        frames = frames[:num_frames]
    flat, tree = pytrees.tree_flatten(frames)

    def stop(*leaves):
        thread_id = None
        if threading.current_thread() is not threading.main_thread():
            thread_id = threading.get_ident()
        with _lock:
            get_debugger(backend)(pytrees.tree_unflatten(tree, list(leaves)), thread_id,
                                  **kwargs)

    if token is None:
        debug.callback(stop, *flat, ordered=ordered)
        return None

    def stop_then_pass(tok, *leaves):
        stop(*leaves)
        return tok
    token, flat = lax.stop_gradient((token, flat))
    return callbacks.pure_callback(stop_then_pass, token, token, *flat)
