"""`tinygrad-ops bench`: runs a benchmark script of the checkout; clear errors otherwise."""

from tinygrad_ops import bench, cli


def test_bench_runs_the_train_step_benchmark(capsys):
    assert cli.main(["bench", "train-step", "--", "--quick"]) == 0
    output = capsys.readouterr().out
    assert "== train-step: train_step.py --quick" in output
    for size in ("64,64,128,10", "256,784,256,10", "8,8,8,4"):
        assert size in output
    assert "100-op chain" in output


def test_bench_without_a_checkout_says_where_the_benchmarks_come_from(
    monkeypatch, tmp_path, capsys
):
    monkeypatch.setattr(bench, "benchmarks_folder", lambda: tmp_path / "missing")
    assert cli.main(["bench", "core"]) == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith("tinygrad-ops bench: error: no benchmarks/ folder")
    assert "source checkout" in error
    assert "\n" not in error


def test_bench_with_an_unknown_name_is_a_usage_error(capsys):
    assert cli.main(["bench", "nonsense"]) == 2
    assert "invalid choice: 'nonsense'" in capsys.readouterr().err


def test_every_benchmark_script_exists():
    for script, _ in bench.BENCHMARKS.values():
        assert (bench.benchmarks_folder() / script).is_file(), script


def test_keep_freed_memory_applies_on_glibc():
    import platform

    from tinygrad_ops.bench import keep_freed_memory

    applied = keep_freed_memory()
    if platform.libc_ver()[0] == "glibc":
        assert applied
    else:  # pragma: no cover - other C libraries have no mallopt: nothing changes
        assert applied is False
