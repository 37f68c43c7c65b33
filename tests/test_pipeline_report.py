"""The report's answer for input pipelines, read from the files real runs wrote: the H200's DataLoader
sweep (results/nvidia-h200/2026-11-26/run-3) and this CPU's tf.data and DataLoader sweep."""

from __future__ import annotations

import copy
from pathlib import Path

from xferbench.reading import pipeline_report
from xferbench.reading.report import render
from xferbench.core.results import Selection, load, select

REPO = Path(__file__).resolve().parent.parent
H200 = REPO / "results" / "nvidia-h200" / "2026-11-26" / "run-3" / "sweeps" / "pipelines.json"
CPU = REPO / "results" / "cpu-amd-epyc-2core" / "pipelines-tf-torch.json"


def picks(path: Path, selection: Selection = Selection()):  # type: ignore[no-untyped-def]
    return select([path], selection)[0]


def test_the_h200_answer_names_the_pipeline_with_the_most_batches_and_its_share_of_the_ceiling() -> None:
    lines = pipeline_report.section(picks(H200))
    text = "\n".join(lines)
    assert lines[0] == "### Input pipelines: what a training loop receives"
    assert ("- **cuda:0** (NVIDIA H200): most batches per second from `torch/loader_pin/copy` at batches 1–512; the best"
            " pipeline reaches 7–28% of the raw ceiling (`cuda/raw_pinned` at the same batch) and 0.07–0.37× the best plain"
            " copy of the same batch.") in text  # fmt: skip
    assert "| 1 | 8,943 (17%) | 1,760 (3%) | **14,775 (28%)** | 1,407 (3%) | 39,742 (`torch/pinned/copy`) | 52,334 |" in text
    assert "| `torch/loader_pin_workers/copy` | 58% (0.76×) | n/a (kernel 0.0848×) | 92% (0.62×) | 72% (0.82×) | 96% (0.54×) |" in text
    assert "| `torch/loader/copy` | 0% (0.73×) | 0% (1×) | 0% (1×) | 0% (1×) | 0% (1×) |" in text


def test_the_winner_follows_the_figures_batch_by_batch() -> None:
    """Make loader_workers the fastest at batch 256 and 512 only: the sentence splits into two runs."""
    chosen = picks(H200)
    changed = copy.deepcopy(chosen)
    for pick in changed:
        if pick.series.mode == "loader_workers":
            for point in pick.series.points:
                if point.batch_size >= 256:
                    point.batches_per_s, point.mbps = point.batches_per_s * 3, point.mbps * 3
    text = "\n".join(pipeline_report.section(changed))
    assert "most batches per second from `torch/loader_pin/copy` at batches 1–64; `torch/loader_workers/copy` at batches 256–512" in text
    assert "| 256 | 43.6 (4%) | **201 (19%)** |" in text


def test_two_files_keep_their_own_columns_ceilings_and_names(tmp_path) -> None:
    """Two runs on cuda:0 (two machines, or one twice): each file's device is a group of its own, named by the
    file, with its own ceiling, and each table's rows as wide as its header."""
    again = tmp_path / "again.json"
    again.write_bytes(H200.read_bytes())
    both = select([H200, again, CPU], Selection())[0]
    text = "\n".join(pipeline_report.section(both))
    assert "- **cuda:0** (NVIDIA H200) in pipelines: most batches" in text and "- **cuda:0** (NVIDIA H200) in again:" in text
    assert "- **cpu** (AMD EPYC) in pipelines-tf-torch:" in text and text.count("| `torch/loader_pin_workers/copy` | 58%") == 2
    assert "With compute (--overlap) in again: how much of the shorter part" in text
    for table in text.split("| batch |")[1:]:
        header, _, *rows = table.split("\n")[:4]
        assert all(row.count("|") == header.count("|") + 2 for row in rows if row.startswith("|")), table[:300]


def test_no_section_without_pipelines_and_the_report_puts_it_first() -> None:
    assert pipeline_report.section(picks(H200, Selection(modes=("pinned", "raw_pinned")))) == []
    report = render(picks(H200))
    assert report.index("### Input pipelines") < report.index("### Summary")


def test_a_tf_and_torch_sweep_on_the_cpu_says_which_delivers_most_without_a_raw_ceiling() -> None:
    text = "\n".join(pipeline_report.section(picks(CPU)))
    assert "- **cpu** (AMD EPYC): most batches per second from " in text
    assert "of the raw ceiling" not in text and "host memcpy, for scale (`host/numpy/copy`)" in text
    assert ("most batches per second from `torch/loader/copy` at batch 1; `tf/dataset/copy` at batches 16–64;"
            " `tf/copy_to_device/copy` at batch 128; `tf/prefetch_to_device/copy` at batch 256; the best pipeline reaches"
            " 0.35–5.03× the best plain copy") in text  # fmt: skip
    # the host memcpy is for scale, never the best plain copy a pipeline is read against
    assert "| 1 | 23,433 | 5,657 | 4,834 | 2,321 | **83,907** | 1,568 | 237,192 (`torch/pageable/copy`) | 517,331 |" in text
    without_host = "\n".join(pipeline_report.section(picks(CPU, Selection(frameworks=("tf", "torch")))))
    assert "| raw ceiling (none ran) |" in without_host
    assert "Batches per second delivered on cpu, the most at each batch in bold; –: not measured:" in without_host
    for mode in ("tf/dataset", "tf/prefetch_to_device", "tf/copy_to_device", "tf/generator", "torch/loader", "torch/loader_workers"):
        assert f"`{mode}/copy`" in text


def test_a_hidden_share_is_left_out_where_the_kernel_was_too_short_or_too_long_for_it_to_mean_anything() -> None:
    """On this CPU the kernel took 3.7× and 4.6× tf.data's delivery at batches 1 and 16, 2.5× the loader's at batch 1 and
    0.43× the workers' at batch 64: n/a with the ratio, and the rule said once under the table's sentence."""
    text = "\n".join(pipeline_report.section(picks(CPU)))
    assert "| `tf/dataset/copy` | n/a (kernel 3.71×) | n/a (kernel 4.6×) | 70% (1.2×) | 76% (1.1×) | 77% (0.99×) |" in text
    assert "| `torch/loader/copy` | n/a (kernel 2.54×) | 0% (1×) |" in text and "| 0% (0.97×) | n/a (kernel 0.432×) |" in text
    assert text.count("n/a: the kernel took less than 1/2 or more than 2 times the delivery's time, so the share would show the"
                      " noise of the longer part, not the pipeline.") == 1  # fmt: skip
    balanced = "\n".join(pipeline_report.section(picks(H200, Selection(modes=("loader", "loader_pin", "raw_pinned")))))
    assert "n/a" not in balanced  # every kernel within 2× of its delivery: no rule to state


def test_the_first_answer_says_which_of_its_figures_a_busy_machine_measured() -> None:
    """Busy points (Point.busy: others took a quarter of the CPUs or more) among the pipelines, the plain copy and the host
    memcpy are named in the answer's sentence and marked (busy) in both tables; a quiet file says nothing of it."""
    chosen = copy.deepcopy(picks(CPU))
    for pick in chosen:
        for point in pick.series.points:
            point.others_cpus, point.cpus = 0.0, 2
            busy = {"dataset": (16, 64), "pageable": (1,), "numpy": (256,)}.get(pick.series.mode, ())
            if point.batch_size in busy:
                point.others_cpus = 0.5  # a quarter of 2 CPUs: busy from here
    text = "\n".join(pipeline_report.section(chosen))
    assert ("the best pipeline reaches 0.35–5.03× the best plain copy of the same batch. Measured on a busy machine at 4 of the"
            " 40 figures below (`tf/dataset/copy` at batch 16, 64; `torch/pageable/copy` at batch 1; `host/numpy/copy` at batch"
            " 256): other processes used a quarter of the CPUs or more, so those figures, marked (busy), may show the machine,"
            " not the pipeline; measure them again on a quiet machine.") in text  # fmt: skip
    assert "the most at each batch in bold; (busy): measured on a busy machine; –: not measured:" in text
    assert "| 16 | **28,908 (busy)** | 5,313 |" in text and "| 237,192 (busy) (`torch/pageable/copy`) | 517,331 |" in text
    assert "| 256 | 519 | **665** |" in text and text.count("| 233 (busy) |") == 1
    assert "| `tf/dataset/copy` | n/a (kernel 3.71×) | n/a (kernel 4.6×) (busy) | 70% (1.2×) (busy) | 76% (1.1×) |" in text
    assert "busy" not in "\n".join(pipeline_report.section(picks(CPU)))


def test_only_host_to_device_copies_are_read_beside_the_pipelines() -> None:
    """The same GPU's d2h and bidir sweep beside it: a bidir copy moves twice the bytes, and is no plain copy of these batches."""
    both = select([H200, H200.parent / "d2h.json"], Selection())[0]
    text = "\n".join(pipeline_report.section(both))
    assert "| 512 | 21.6 (4%) | 26.5 (5%) | **36.1 (7%)** | 26 (5%) | 539 (`torch/pinned/copy`) | 543 |" in text
    assert "d2h" not in text and "bidir" not in text


def test_two_runs_with_other_dataloader_workers_say_so_in_what_differs() -> None:
    from xferbench.reading.pairs import differences

    result = load(H200)
    other = copy.deepcopy(result)
    for series in other.series:
        if series.params.get("num_workers"):
            series.params["num_workers"] = 2
    found = {d.field: d.values for d in differences([(result, result.series), (other, other.series)])}
    assert found["DataLoader workers"] == ["4", "2"]
    assert "DataLoader workers" not in {d.field for d in differences([(result, result.series), (result, result.series)])}


EXPECTED = Path(__file__).resolve().parent / "expected" / "pipeline-section-h200.md"


def test_the_h200_section_reads_word_for_word_as_a_reader_gets_it() -> None:
    """The whole section of the H200 run, as committed: every sentence, header and cell a reader sees."""
    assert "\n".join(pipeline_report.section(picks(H200))) + "\n" == EXPECTED.read_text()


def test_batches_one_file_lacks_show_as_not_measured_and_one_batch_gives_one_figure() -> None:
    chosen = copy.deepcopy(picks(H200, Selection(modes=("loader", "loader_pin", "raw_pinned"))))
    for pick in chosen:
        if pick.series.mode == "loader":
            pick.series.points = [p for p in pick.series.points if p.batch_size != 16]
        if pick.series.mode == "loader_pin":
            for point in pick.series.points:
                if point.batch_size == 64:
                    point.compute = None
    text = "\n".join(pipeline_report.section(chosen))
    assert "| 16 | – | **1,982 (15%)** | – | 13,655 |" in text  # no plain copy picked: none to name
    assert "| `torch/loader_pin/copy` | 0% (1×) | 0% (0.96×) | – | 0% (1×) | 5% (1×) |" in text
    assert "the best pipeline reaches 7–28% of the raw ceiling (`cuda/raw_pinned` at the same batch)." in text
    one = "\n".join(pipeline_report.section(picks(H200, Selection(modes=("loader_pin", "pinned", "raw_pinned")))))
    one_batch = copy.deepcopy(picks(H200, Selection(modes=("loader_pin", "pinned", "raw_pinned"))))
    for pick in one_batch:
        pick.series.points = [p for p in pick.series.points if p.batch_size == 64]
    text = "\n".join(pipeline_report.section(one_batch))
    assert ("most batches per second from `torch/loader_pin/copy` at batch 64; the best pipeline reaches 18% of the raw"
            " ceiling (`cuda/raw_pinned` at the same batch) and 0.18× the best plain copy of the same batch.") in text
    assert "0.07–0.37× the best plain copy" in one


def test_a_device_without_pipelines_is_passed_over_and_two_files_are_named() -> None:
    chosen = select([H200, CPU], Selection(modes=("pinned", "raw_pinned", "dataset", "eager")))[0]
    text = "\n".join(pipeline_report.section(chosen))
    assert "**cuda:0**" not in text and "- **cpu** (AMD EPYC) in pipelines-tf-torch: most batches per second from" in text
    alone = "\n".join(pipeline_report.section(select([CPU], Selection(modes=("dataset", "generator")))[0]))
    assert "- **cpu** (AMD EPYC): most batches per second from `tf/dataset/copy` at batches 1–256." in alone  # nothing to compare against
