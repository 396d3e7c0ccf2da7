"""lamina-opt: the opt-style driver — read MLIR, run passes in order, print MLIR.

    lamina-opt [FILE|-] [--<pass>[=opts] ...] [--pass-pipeline='builtin.module(...)'] [-o OUT]
               [--split-input-file] [--mlir-print-ir-after-all] [--mlir-print-debuginfo]
               [--mlir-print-op-generic] [--verify-each=0|1]

Passes run in command-line order. A `--<name>` is a lamina pass from the registry
(lamina.transforms.registry; `--help` lists them) or else any upstream MLIR pass
(`--canonicalize`, `--one-shot-bufferize="bufferize-function-boundaries"`). Options
of a lamina pass are `--lamina-fold-constants="max-elements=4096"` (dashes become
underscores in the keyword arguments). `--pass-pipeline` takes a textual pipeline;
lamina pass names may appear at its top level (`builtin.module(lamina-dce,cse)`).

The module is verified after parsing and after every pass (IRDL structure and the
lamina shape/dtype rules; `--verify-each=0` turns the latter off). Errors print as
`file:line:col: error: message` (the location of the offending op when there is one)
and exit with status 1; `LAMINA_DEBUG=1` also prints the Python traceback.
"""
from __future__ import annotations

import os
import re
import sys
import traceback
from dataclasses import dataclass, field

USAGE = """\
usage: lamina-opt [FILE|-] [--<pass>[=options] ...] [--pass-pipeline=PIPELINE] [-o OUT] [options]

Reads MLIR (a file, or stdin when FILE is '-' or absent), runs the passes in
command-line order, prints the resulting module (lamina ops in generic form).

options:
  -h, --help                  show this help (and every registered lamina pass) and exit
  -o OUT                      write the output to OUT instead of stdout
  --pass-pipeline=PIPELINE    run a textual pipeline, e.g. 'builtin.module(canonicalize,lamina-dce)';
                              lamina passes may appear at its top level
  --split-input-file          process each '// -----' separated chunk of the input on its own
  --mlir-print-ir-after-all   print the IR to stderr after every pass
  --mlir-print-debuginfo      print locations
  --mlir-print-op-generic     print every op in generic form
  --verify-each=0|1           check the lamina shape/dtype rules after parsing and each pass (default 1)
  --print-triton              print the Triton source of each kernel (after --lamina-to-triton) instead of the IR
  --<upstream-pass>[=opts]    any MLIR pass mlir-opt knows (--canonicalize, --cse, --one-shot-bufferize ...)

environment: LAMINA_DEBUG=1 prints Python tracebacks of failures.
"""


class UsageError(Exception):
    pass


class Failed(Exception):
    """Diagnostics were printed; exit 1."""


# ---- diagnostics -----------------------------------------------------------------------------

def format_location(loc, input_name: str) -> str | None:
    """'file:line:col' for an ir.Location (through name/callsite/fused locs), or None."""
    if loc is None:
        return None
    try:
        if loc.is_a_file():
            fname = loc.filename
            if fname in ("-", ""):
                fname = input_name
            return f"{fname}:{loc.start_line}:{loc.start_col}"
        if loc.is_a_name():
            return format_location(loc.child_loc, input_name)
        if loc.is_a_callsite():
            return format_location(loc.callee, input_name)
        if loc.is_a_fused():
            for inner in loc.locations:
                text = format_location(inner, input_name)
                if text:
                    return text
    except Exception:
        pass
    m = re.search(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)', str(loc))
    if m:
        fname = input_name if m.group(1) in ("-", "") else m.group(1)
        return f"{fname}:{m.group(2)}:{m.group(3)}"
    return None


class Reporter:
    def __init__(self, input_name: str):
        self.input_name = input_name
        self.seen: set[str] = set()

    def emit(self, loc, severity: str, message: str) -> None:
        where = format_location(loc, self.input_name) or self.input_name
        line = f"{where}: {severity}: {message}"
        if line in self.seen:
            return
        self.seen.add(line)
        print(line, file=sys.stderr)

    def mlir_diagnostic(self, d) -> None:
        severity = {"ERROR": "error", "WARNING": "warning", "NOTE": "note", "REMARK": "remark"}.get(
            str(d.severity).rsplit(".", 1)[-1], "error")
        self.emit(d.location, severity, d.message)
        for n in d.notes:
            self.mlir_diagnostic_note(n)

    def mlir_diagnostic_note(self, n) -> None:
        self.emit(n.location, "note", n.message)
        for nn in getattr(n, "notes", []):
            self.mlir_diagnostic_note(nn)

    def exception(self, e: BaseException, context: str = "") -> None:
        """Print an exception as located diagnostics."""
        from mlir import ir

        prefix = f"{context}: " if context else ""
        diags = getattr(e, "diagnostics", None)
        if isinstance(e, ir.MLIRError):
            if e.error_diagnostics:
                for d in e.error_diagnostics:
                    self.mlir_diagnostic(d)
            else:
                self.emit(None, "error", prefix + str(e))
            return
        if diags:
            for loc, msg in diags:
                self.emit(loc, "error", msg if loc is not None else prefix + msg)
            return
        loc = getattr(e, "location", None) or getattr(e, "loc", None)
        op = getattr(e, "op", None)
        if not isinstance(loc, ir.Location):
            loc = None
        if loc is None and op is not None:
            try:
                loc = op.location
            except Exception:
                loc = None
        if loc is None:  # an exception whose arguments name an op or a location
            for arg in getattr(e, "args", ()):
                if isinstance(arg, ir.Location):
                    loc = arg
                    break
                if isinstance(arg, (ir.Operation, ir.OpView)):
                    loc = arg.location
                    break
        text = str(e) or type(e).__name__
        if not isinstance(e, (ValueError, RuntimeError)) or not str(e):
            text = f"{type(e).__name__}: {text}"
        self.emit(loc, "error", prefix + text)


# ---- passes ----------------------------------------------------------------------------------

@dataclass
class Step:
    kind: str                 # "lamina" | "mlir"
    name: str                 # display name
    run: object = None        # PassInfo for lamina, pipeline text for mlir
    options: dict = field(default_factory=dict)


def load_passes() -> tuple[dict, list[str]]:
    """All registered lamina passes by name, and warnings for modules that failed to import."""
    from lamina.transforms import registry

    try:
        return {p.name: p for p in registry.all_passes()}, []
    except Exception:
        pass
    # A module of a pass package is broken (someone is editing it): load the others.
    import importlib
    import pkgutil

    warnings = []
    for pkg_name in ("lamina.transforms", "lamina.lowering", "lamina.codegen"):
        try:
            pkg = importlib.import_module(pkg_name)
        except Exception as e:
            warnings.append(f"cannot import {pkg_name}: {type(e).__name__}: {e}")
            continue
        for info in pkgutil.iter_modules(pkg.__path__):
            try:
                importlib.import_module(f"{pkg_name}.{info.name}")
            except Exception as e:
                warnings.append(f"cannot import {pkg_name}.{info.name}: {type(e).__name__}: {e}")
    return dict(registry._PASSES), warnings


def _convert_option(v: str):
    low = v.lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    return v


def parse_pass_options(text: str) -> dict:
    """'max-elements=4096 use-patterns=0' -> {'max_elements': 4096, 'use_patterns': 0}."""
    opts = {}
    for item in _split_top_level(text.strip().strip("{}"), sep=" "):
        item = item.strip()
        if not item:
            continue
        key, _, value = item.partition("=")
        opts[key.strip().replace("-", "_")] = _convert_option(value.strip()) if _ else True
    return opts


def _split_top_level(text: str, sep: str = ",") -> list[str]:
    parts, depth, quote, cur = [], 0, None, []
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return [p for p in (x.strip() for x in parts) if p]


def _mlir_step(pipeline: str, display: str) -> Step:
    from mlir.passmanager import PassManager

    try:
        PassManager.parse(pipeline)
    except Exception as e:
        raise UsageError(f"{display}: {str(e).strip()}") from None
    return Step("mlir", display, pipeline)


def pipeline_steps(pipeline: str, passes: dict) -> list[Step]:
    """Steps of a --pass-pipeline; lamina pass names at the top level of builtin.module(...) run as lamina passes."""
    text = pipeline.strip()
    m = re.fullmatch(r"builtin\.module\s*\((.*)\)", text, re.S)
    if not m:
        return [_mlir_step(text, text)]
    steps: list[Step] = []
    upstream: list[str] = []

    def flush():
        if upstream:
            inner = ",".join(upstream)
            steps.append(_mlir_step(f"builtin.module({inner})", inner))
            upstream.clear()

    for element in _split_top_level(m.group(1)):
        name = re.match(r"[^{(\s]+", element).group(0)
        if name in passes:
            flush()
            rest = element[len(name):].strip()
            steps.append(Step("lamina", name, passes[name], parse_pass_options(rest) if rest else {}))
        else:
            upstream.append(element)
    flush()
    return steps


def flag_step(name: str, value: str | None, passes: dict) -> Step:
    if name in passes:
        return Step("lamina", name, passes[name], parse_pass_options(value) if value else {})
    opts = f"{{{value.strip().strip(chr(34)).strip(chr(39))}}}" if value else ""
    from mlir.passmanager import PassManager

    errors = []
    for pipeline in (f"builtin.module({name}{opts})", f"builtin.module(func.func({name}{opts}))"):
        try:
            PassManager.parse(pipeline)
            return Step("mlir", name, pipeline)
        except Exception as e:
            errors.append(str(e).strip())
    if opts:  # a known upstream pass with bad options: show MLIR's complaint
        try:
            PassManager.parse(f"builtin.module({name})")
            raise UsageError(f"--{name}={value}: {errors[0]}")
        except UsageError:
            raise
        except Exception:
            pass
    raise UsageError(f"unknown pass or option '--{name}' (lamina-opt --help lists the lamina passes)")


# ---- command line ----------------------------------------------------------------------------

@dataclass
class Options:
    input: str = "-"
    output: str | None = None
    steps: list = field(default_factory=list)
    split_input_file: bool = False
    print_after_all: bool = False
    debuginfo: bool = False
    generic: bool = False
    verify_each: bool = True
    print_triton: bool = False
    help: bool = False


_BOOL_FLAGS = {"split-input-file": "split_input_file", "mlir-print-ir-after-all": "print_after_all",
               "mlir-print-debuginfo": "debuginfo", "mlir-print-op-generic": "generic",
               "verify-each": "verify_each", "print-triton": "print_triton"}


def _bool_value(v: str | None, flag: str) -> bool:
    if v is None:
        return True
    if v.lower() in ("1", "true", "yes", "on"):
        return True
    if v.lower() in ("0", "false", "no", "off"):
        return False
    raise UsageError(f"option '--{flag}' takes a boolean, got '{v}'")


def parse_args(argv: list[str], passes_loader) -> Options:
    opts = Options()
    positional: list[str] = []
    pending = []   # (name, value) pass flags, resolved after --help is known
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg in ("-h", "-help", "--help"):
            opts.help = True
            continue
        if arg == "-" or not arg.startswith("-"):
            positional.append(arg)
            continue
        if arg == "-o" or arg == "--o":
            if i >= len(argv):
                raise UsageError("option '-o' needs a file name")
            opts.output = argv[i]
            i += 1
            continue
        if arg.startswith("-o=") or arg.startswith("--o="):
            opts.output = arg.split("=", 1)[1]
            continue
        body = arg.lstrip("-")
        name, eq, value = body.partition("=")
        if not eq:
            value = None
        if name == "pass-pipeline":
            if value is None:
                if i >= len(argv):
                    raise UsageError("option '--pass-pipeline' needs a pipeline")
                value = argv[i]
                i += 1
            pending.append(("--pass-pipeline", value))
            continue
        if name in _BOOL_FLAGS:
            setattr(opts, _BOOL_FLAGS[name], _bool_value(value, name))
            continue
        if name == "no-verify":
            opts.verify_each = False
            continue
        pending.append((name, value))
    if opts.help:
        return opts
    if len(positional) > 1:
        raise UsageError(f"expected one input file, got {len(positional)}: {' '.join(positional)}")
    if positional:
        opts.input = positional[0]
    passes = passes_loader()
    for name, value in pending:
        if name == "--pass-pipeline":
            opts.steps.extend(pipeline_steps(value, passes))
        else:
            opts.steps.append(flag_step(name, value, passes))
    return opts


def print_help(out=sys.stdout) -> None:
    passes, warnings = load_passes()
    out.write(USAGE)
    out.write("\nlamina passes (--<name>):\n")
    width = max((len(n) for n in passes), default=0) + 2
    for p in sorted(passes.values(), key=lambda p: (p.level, p.name)):
        out.write(f"  --{p.name:<{width}} [{p.level}] {p.description}\n")
    for w in warnings:
        print(f"lamina-opt: warning: {w}", file=sys.stderr)


# ---- running ---------------------------------------------------------------------------------

def split_chunks(text: str) -> list[str]:
    """Chunks separated by '// -----' lines, each padded with newlines so line numbers stay those of the file."""
    lines = text.splitlines(keepends=True)
    chunks, cur, start = [], [], 0
    for n, line in enumerate(lines):
        if re.match(r"^\s*//\s*-----\s*$", line):
            chunks.append("\n" * start + "".join(cur))
            cur, start = [], n + 1
        else:
            cur.append(line)
    chunks.append("\n" * start + "".join(cur))
    return chunks


def _verify(module, reporter: Reporter, opts: Options, after: str) -> None:
    from mlir import ir

    try:
        module.operation.verify()
    except ir.MLIRError as e:
        reporter.exception(e)
        raise Failed() from None
    if opts.verify_each:
        from lamina.transforms.verify import verify_module

        problems = verify_module(module)
        for loc, msg in problems:
            reporter.emit(loc, "error", msg + (f" (after {after})" if after else ""))
        if problems:
            raise Failed()


def _print_module(module, opts: Options) -> str:
    if opts.print_triton:
        from mlir import ir

        texts = [f"# ---- {ir.StringAttr(op.attributes['sym_name']).value}\n"
                 f"{ir.StringAttr(op.attributes['lamina.triton']).value}"
                 for op in module.body.operations if "lamina.triton" in op.attributes]
        if not texts:
            raise UsageError("--print-triton: no kernel has Triton source (run --lamina-to-triton first)")
        return "\n".join(texts)
    return module.operation.get_asm(enable_debug_info=opts.debuginfo, print_generic_op_form=opts.generic)


# Inputs the MLIR parser of the assertion-enabled wheels aborts on instead of diagnosing
# (found by tools/fuzz_lamina_opt.py): a dense array attribute of an element type other than
# the ones DenseArrayAttr has (`array<index: 1>` asserts in Type::getIntOrFloatBitWidth).
_DENSE_ARRAY = re.compile(r"\barray<\s*([^\s:>]+)")
_DENSE_ARRAY_TYPES = ("i1", "i8", "i16", "i32", "i64", "f32", "f64")


def _unparseable(text: str, input_name: str) -> list[str]:
    """Diagnostics for input the parser would abort on (checked before parsing)."""
    found = []
    for m in _DENSE_ARRAY.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if "//" in text[line_start:m.start()]:
            continue   # a comment
        if m.group(1) not in _DENSE_ARRAY_TYPES:
            line = text.count("\n", 0, m.start(1)) + 1
            col = m.start(1) - (text.rfind("\n", 0, m.start(1)) + 1) + 1
            found.append(f"{input_name}:{line}:{col}: error: dense array attribute of element type "
                         f"'{m.group(1)}' (expected one of {', '.join(_DENSE_ARRAY_TYPES)})")
    return found


def process(text: str, opts: Options, reporter: Reporter, diagnostics: list, from_file: str | None) -> str:
    """Parse, verify, run the steps; returns the printed module. Raises Failed."""
    from mlir import ir
    from mlir.passmanager import PassManager

    diagnostics.clear()
    if from_file:
        with open(from_file, encoding="utf-8", errors="replace") as f:
            text = f.read()
    problems = _unparseable(text, reporter.input_name)
    if problems:
        for line in problems:
            print(line, file=sys.stderr)
        raise Failed()
    try:
        module = ir.Module.parseFile(from_file) if from_file else ir.Module.parse(text)
    except ir.MLIRError as e:
        reporter.exception(e)
        raise Failed() from None
    _verify(module, reporter, opts, "")
    for step in opts.steps:
        diagnostics.clear()
        try:
            if step.kind == "lamina":
                step.run.run(module, **step.options)
            else:
                pm = PassManager.parse(step.run)
                if opts.print_after_all:  # MLIR's own dump after each pass of the pipeline
                    pm.enable_ir_printing(print_after_all=True, print_module_scope=True,
                                          enable_debug_info=opts.debuginfo, print_generic_op_form=opts.generic)
                pm.run(module.operation)
        except Exception as e:
            if os.environ.get("LAMINA_DEBUG"):
                traceback.print_exc()
            for d in list(diagnostics):
                reporter.mlir_diagnostic(d)
            reporter.exception(e, context=f"{step.name} failed")
            raise Failed() from None
        for d in list(diagnostics):  # warnings/remarks a pass emitted without failing
            reporter.mlir_diagnostic(d)
        _verify(module, reporter, opts, step.name)
        if opts.print_after_all and step.kind == "lamina":
            sys.stderr.flush()
            sys.stderr.write(f"// -----// IR Dump After {step.name} //----- //\n{_print_module(module, opts)}\n")
    return _print_module(module, opts)


class _Diag:
    """A diagnostic captured in the handler (the handler's object dies with the call)."""

    def __init__(self, d):
        self.location = d.location
        self.severity = d.severity
        self.message = d.message
        self.notes = [_Diag(n) for n in d.notes]


def run(opts: Options, ctx) -> int:
    from mlir import ir

    input_name = "<stdin>" if opts.input == "-" else opts.input
    reporter = Reporter(input_name)
    try:
        if opts.input == "-":
            text = sys.stdin.read()
        else:
            with open(opts.input, encoding="utf-8") as f:
                text = f.read()
    except OSError as e:
        print(f"lamina-opt: error: cannot read '{input_name}': {e.strerror}", file=sys.stderr)
        return 1

    diagnostics: list = []
    if opts.print_after_all:
        # MLIR aborts (LLVM ERROR) when IR printing is set up on a multi-threaded context.
        ctx.enable_multithreading(False)

    def handler(d):
        diagnostics.append(_Diag(d))
        return True

    ctx.attach_diagnostic_handler(handler)
    outputs, failed = [], False
    with ctx, ir.Location.unknown():
        if opts.split_input_file:
            chunks = [(c, None) for c in split_chunks(text)]
        else:
            chunks = [(text, opts.input if opts.input != "-" else None)]
        for chunk, path in chunks:
            try:
                outputs.append(process(chunk, opts, reporter, diagnostics, path))
            except Failed:
                failed = True
    result = "\n// -----\n".join(o.rstrip("\n") for o in outputs) + "\n" if outputs else ""
    if opts.output and opts.output != "-":
        if failed:
            return 1  # as mlir-opt: no output file when something failed
        with open(opts.output, "w", encoding="utf-8") as f:
            f.write(result)
    else:
        sys.stdout.write(result)  # with --split-input-file, the chunks that passed
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        from lamina import dialect

        ctx = dialect.make_context()
        with ctx:  # upstream pipelines are parsed (validated) while reading the command line
            opts = parse_args(argv, _passes_or_warn)
        if opts.help:
            print_help()
            return 0
        return run(opts, ctx)
    except UsageError as e:
        print(f"lamina-opt: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1
    except Exception as e:  # never a traceback unless asked for
        if os.environ.get("LAMINA_DEBUG"):
            traceback.print_exc()
        print(f"lamina-opt: error: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


def _passes_or_warn() -> dict:
    passes, warnings = load_passes()
    for w in warnings:
        print(f"lamina-opt: warning: {w}", file=sys.stderr)
    return passes


if __name__ == "__main__":
    sys.exit(main())
