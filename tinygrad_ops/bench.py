"""`tinygrad-ops bench`: run the side-by-side benchmarks of a source checkout.

    tinygrad-ops bench report                measure every figure of benchmarks/README.md in one
                                             run and write its tables (and the picture)
    tinygrad-ops bench train-step            one SGD step: hand-written numpy, PyTorch, this engine
    tinygrad-ops bench core -- --rounds 9    per-op overhead; arguments after -- go to the script
    tinygrad-ops bench all                   each script in turn (not report)

The scripts live in `benchmarks/` next to the package (they are not installed) and need
PyTorch, the reference they are measured against (`pip install -e ".[test]"`).
"""

from __future__ import annotations

import contextlib
import os
import platform
import runpy
import sys
from pathlib import Path

# The generated section of benchmarks/README.md: `bench report` writes between these lines,
# and tests/test_docs.py allows speed figures there only (and in quotes of its lines).
GENERATED_BEGIN = "<!-- BEGIN GENERATED FIGURES -->"
GENERATED_END = "<!-- END GENERATED FIGURES -->"

# Name on the command line -> script in benchmarks/ and what it measures.
BENCHMARKS = {
    "report": ("report.py", "every figure of benchmarks/README.md, written into it"),
    "train-step": ("train_step.py", "a 2-layer MLP training step vs numpy and PyTorch"),
    "core": ("bench_core.py", "per-op overhead of a 100-op chain; a 100,000-node backward"),
    "nn-ops": ("bench_nn_ops.py", "softmax and the norms, forward+backward, vs PyTorch"),
    "scan": ("bench_scan.py", "backward time per scheduler over RNN formulations and sizes"),
    "bppsa": ("bench_bppsa.py", "BPPSA's grid: walk vs scans, hidden 20, lengths 10-30,000"),
}


def keep_freed_memory() -> bool:
    """Ask glibc's allocator to keep the memory a step frees for the next step.

    By default glibc hands freed memory at the top of the heap back to the OS, and serves
    arrays from 128 KiB up with fresh mappings; depending on where live objects happen to
    sit, every step then page-faults on memory it just freed: layer_norm on (256, 1024)
    ran 5x slower so in some processes. This is the in-process form of
    `MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_` and `MALLOC_TOP_PAD_`; `bench_nn_ops.py`
    calls it once at start, for both engines it compares. (The training-step and scan
    benchmarks do not: there it made no difference beyond the noise.) Returns False where
    glibc's `mallopt` is not available (then nothing changes).
    """
    import ctypes
    import ctypes.util

    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mmap_threshold, trim_threshold, top_pad = -3, -1, -2  # glibc's malloc.h parameters
    settings = ((mmap_threshold, 32 * 2**20), (trim_threshold, 512 * 2**20), (top_pad, 64 * 2**20))
    return all(mallopt(parameter, value) == 1 for parameter, value in settings)


def write_generated(path, section):
    """Replace the text between the GENERATED markers of the file at `path` by `section`.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "README.md"
    >>> _ = path.write_text(f"# Figures\\n{GENERATED_BEGIN}\\nold\\n{GENERATED_END}\\nMethod.\\n")
    >>> write_generated(path, "| a | 1.0x |\\n")
    >>> print(path.read_text())
    # Figures
    <!-- BEGIN GENERATED FIGURES -->
    | a | 1.0x |
    <!-- END GENERATED FIGURES -->
    Method.
    <BLANKLINE>
    """
    text = Path(path).read_text(encoding="utf-8")
    if text.count(GENERATED_BEGIN) != 1 or text.count(GENERATED_END) != 1:
        raise BenchmarkError(
            f"{path} must hold the lines {GENERATED_BEGIN} and {GENERATED_END} once each: "
            "the generated figures are written between them"
        )
    head, rest = text.split(GENERATED_BEGIN)
    _, tail = rest.split(GENERATED_END)
    body = section if section.endswith("\n") else section + "\n"
    Path(path).write_text(f"{head}{GENERATED_BEGIN}\n{body}{GENERATED_END}{tail}", encoding="utf-8")


def machine_description():
    """The processor and its core count, e.g. 'a 2-core x86_64 machine (AMD EPYC 7B13)'."""
    model = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = " (" + " ".join(line.split(":", 1)[1].split()) + ")"
                break
    return f"a {os.cpu_count()}-core {platform.machine()} machine{model}"


def blas_description():
    """numpy's BLAS library and version, as threadpoolctl reports it ('BLAS' without it)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "BLAS"
    for pool in threadpool_info():
        if pool.get("user_api") == "blas":
            return f"{pool.get('internal_api', 'BLAS')} {pool.get('version') or ''}".strip()
    return "BLAS"


def one_blas_thread():
    """A context in which numpy's BLAS uses one thread (threadpoolctl; without it the
    environment's OPENBLAS_NUM_THREADS applies, set before numpy is imported)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


class BenchmarkError(OSError):
    """The benchmarks cannot be run here (no source checkout, or PyTorch missing)."""


def benchmarks_folder() -> Path:
    """The `benchmarks/` folder of the source checkout this package was installed from."""
    return Path(__file__).resolve().parent.parent / "benchmarks"


def add_arguments(parser):
    """The options of `tinygrad-ops bench`."""
    listing = "; ".join(f"{name}: {about}" for name, (_, about) in BENCHMARKS.items())
    parser.add_argument(
        "name",
        choices=[*BENCHMARKS, "all"],
        help=f"which benchmark to run ({listing}; all: each in turn)",
    )
    parser.add_argument(
        "script_args",
        nargs="*",
        metavar="ARG",
        help="arguments passed on to the benchmark script (put them after --)",
    )


def run(args) -> int:
    """Run the chosen benchmark script(s) in this process; returns the exit code."""
    folder = benchmarks_folder()
    if not folder.is_dir():
        raise BenchmarkError(
            f"no benchmarks/ folder at {folder}: the benchmarks come with a source checkout "
            "(git clone, then pip install -e '.[all,test]')"
        )
    try:
        import torch  # noqa: F401 (only checks that the reference is installed)
    except ImportError:
        raise BenchmarkError(
            "the benchmarks compare against PyTorch: pip install torch==2.13.0 "
            "(or pip install -e '.[test]')"
        ) from None
    names = [name for name in BENCHMARKS if name != "report"] if args.name == "all" else [args.name]
    for name in names:
        script = folder / BENCHMARKS[name][0]
        print(f"== {name}: {script.name} {' '.join(args.script_args)}".rstrip(), flush=True)
        saved_argv, saved_path = sys.argv, list(sys.path)
        sys.argv = [str(script), *args.script_args]
        # As `python benchmarks/NAME.py`: the script's folder first, for its shared modules.
        sys.path.insert(0, str(folder))
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as exit_request:
            if exit_request.code not in (None, 0):
                return exit_request.code if isinstance(exit_request.code, int) else 1
        finally:
            sys.argv, sys.path[:] = saved_argv, saved_path
    return 0
