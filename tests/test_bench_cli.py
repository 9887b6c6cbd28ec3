"""`tinygrad-ops bench`: runs a benchmark script of the checkout; clear errors otherwise;
`bench report` writes benchmarks/README.md's generated figures."""

import importlib.util

import pytest

from tinygrad_ops import bench, cli


def _report_module(monkeypatch):
    """benchmarks/report.py, imported as `tinygrad-ops bench` runs it (its folder on the path)."""
    folder = bench.benchmarks_folder()
    monkeypatch.syspath_prepend(str(folder))
    spec = importlib.util.spec_from_file_location("report", folder / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def test_write_generated_replaces_only_the_section_between_the_markers(tmp_path):
    path = tmp_path / "README.md"
    path.write_text(f"head\n{bench.GENERATED_BEGIN}\nold 1.0x\n{bench.GENERATED_END}\ntail\n")
    bench.write_generated(path, "new 2.0x")
    assert path.read_text() == (
        f"head\n{bench.GENERATED_BEGIN}\nnew 2.0x\n{bench.GENERATED_END}\ntail\n"
    )


def test_write_generated_refuses_a_file_without_the_markers(tmp_path):
    path = tmp_path / "README.md"
    path.write_text("no markers here\n")
    with pytest.raises(bench.BenchmarkError, match="GENERATED"):
        bench.write_generated(path, "x")


def test_bench_all_runs_the_scripts_but_not_the_report(monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(bench.runpy, "run_path", lambda path, run_name: ran.append(path))
    assert cli.main(["bench", "all"]) == 0
    names = [path.rsplit("/", 1)[-1] for path in ran]
    assert "report.py" not in names
    assert names == [script for name, (script, _) in bench.BENCHMARKS.items() if name != "report"]


def test_the_benchmarks_readme_holds_a_generated_section():
    text = (bench.benchmarks_folder() / "README.md").read_text(encoding="utf-8")
    section = text.split(bench.GENERATED_BEGIN)[1].split(bench.GENERATED_END)[0]
    assert "Measured by `tinygrad-ops bench report`" in section
    for table in ("### Training step", "### Per-op overhead", "### nn ops", "### Scan schedulers"):
        assert table in section
    assert "(../docs/images/scan_crossover.png)" in section


@pytest.mark.slow
def test_the_report_measures_and_writes_every_table(monkeypatch, tmp_path):
    # The smallest run: it calls every benchmark script's steps as `bench report` does, so a
    # change to one of them that breaks the report fails here, not at the next full run.
    report = _report_module(monkeypatch)
    tiny = {"runs": 1, "rounds": 1, "nn_rounds": 1, "hiddens": [4], "lengths": [8],
            "scan_rounds": 1}  # fmt: skip
    section, scans = report.measure(log=lambda line: None, settings=tiny)
    for table in ("### Training step", "### Per-op overhead", "### nn ops", "### Scan schedulers"):
        assert table in section
    assert section.count("| 64, 64, 128, 10 |") == 1
    assert "| 4 | 8 |" in section
    readme = tmp_path / "README.md"
    readme.write_text(f"# B\n{bench.GENERATED_BEGIN}\n{bench.GENERATED_END}\n")
    bench.write_generated(readme, section)
    assert "### Scan schedulers" in readme.read_text()
    report.plot_speedup(scans, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_picture_has_a_line_per_chain_length(monkeypatch, tmp_path):
    report = _report_module(monkeypatch)
    figures = {"speedup": 2.0, "best_scan": "blelloch", "auto_best": 1.0}
    results = [
        (hidden, steps, {"sequential": 0.01, "blelloch": 0.005}, dict(figures, speedup=value))
        for steps, values in ((256, (2.0, 1.2, 0.5)), (2048, (4.0, 1.5, 0.3)))
        for hidden, value in zip((4, 32, 64), values)
    ]
    lines = report.speedup_lines(results)
    assert lines == {256: [(4, 2.0), (32, 1.2), (64, 0.5)], 2048: [(4, 4.0), (32, 1.5), (64, 0.3)]}
    table = report.scheduler_table(results)
    assert "| 4 | 2,048 | 10 ms | 5 ms (blelloch) | 4.00x | 1.00x |" in table
