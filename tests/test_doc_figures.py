"""The README's and docs' figures against the committed result files they quote (scripts/doc_figures.py).

A figure changed in one result file must fail here, naming the document and the line that quotes it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import load_script

ROOT = Path(__file__).resolve().parent.parent
figures = load_script("doc_figures")

RUN5_LARGE = "results/nvidia-h200/2026-11-26/run-5/validation/large.json"
RUN2_DEFAULT = "results/nvidia-h200/2026-11-26/run-2/validation/default.json"


def test_every_block_and_claim_matches_its_files() -> None:
    """What `scripts/doc_figures.py --check` says: no generated table and no quoted figure differs."""
    problems = figures.Figures().check()
    assert not problems, "\n".join(map(str, problems)) + "\nrun: .venv/bin/python scripts/doc_figures.py"


def test_every_document_with_figures_has_its_blocks_and_claims() -> None:
    """The README and the three documents of results each have a spec, and every spec block is placed."""
    docs = {spec.doc: spec for spec in figures.Figures().specs()}
    for doc in ("README.md", "docs/reference-results.md", "docs/pipelines.md", "docs/tensorflow.md"):
        assert doc in docs, f"{doc} has no docs/figures/*.toml"
        assert docs[doc].blocks or docs[doc].claims


def _changed(tmp_path: Path, relative: str, change) -> Path:
    """A copy of a committed result file with one figure changed by `change(data)`."""
    data = json.loads((ROOT / relative).read_text(encoding="utf-8"))
    change(data)
    copy = tmp_path / Path(relative).name
    copy.write_text(json.dumps(data), encoding="utf-8")
    return copy


def _point(data: dict, label: tuple[str, str, str | None], batch: int) -> dict:
    framework, mode, method = label
    (series,) = [s for s in data["series"] if (s["framework"], s["mode"]) == (framework, mode)
                 and (s.get("method") == "streamed") == (method == "streamed")
                 and s["op"] == "copy" and s.get("direction") in (None, "h2d")]  # fmt: skip
    (point,) = [p for p in series["points"] if p["batch_size"] == batch]
    return point


def test_a_figure_changed_in_a_result_file_fails_naming_the_document_and_line(tmp_path) -> None:
    """run-5's streamed raw pinned copy at 1 GiB, 1% faster in the file: the claim quoting 55,508 MB/s
    fails at its line, and so does the table that shows it."""

    def faster(data: dict) -> None:
        _point(data, ("cuda", "raw_pinned", "streamed"), 1024)["mbps"] *= 1.01

    problems = figures.Figures(replaced={RUN5_LARGE: _changed(tmp_path, RUN5_LARGE, faster)}).check()
    text = (ROOT / "docs/reference-results.md").read_text(encoding="utf-8").splitlines()
    claim_line = next(i for i, line in enumerate(text, 1) if "pinned ceiling 55,508 MB/s = 88.1%" in line)
    said = [str(p) for p in problems]
    assert f"docs/reference-results.md:{claim_line}: says 'pinned ceiling 55,508 MB/s = 88.1%" in "\n".join(said), said
    assert any(s.startswith("docs/reference-results.md:") and "block h200-facts differs" in s and "56,063" in s for s in said), said
    assert all(str(RUN5_LARGE) in s for s in said if " says " in s)


def test_a_figure_only_a_table_shows_fails_at_the_tables_line(tmp_path) -> None:
    """run-2's torch pinned_into at batch 16 (a share in the table only): the block fails at the row's line."""

    def slower(data: dict) -> None:
        _point(data, ("torch", "pinned_into", None), 16)["mbps"] *= 0.5

    problems = figures.Figures(replaced={RUN2_DEFAULT: _changed(tmp_path, RUN2_DEFAULT, slower)}).check()
    text = (ROOT / "docs/reference-results.md").read_text(encoding="utf-8").splitlines()
    row = next(i for i, line in enumerate(text, 1) if line.startswith("| torch/pinned_into |"))
    assert [str(p) for p in problems] == [
        f"docs/reference-results.md:{row}: block h200-shares differs from its files: the document has"
        f" {text[row - 1]!r}, the files give {text[row - 1].replace('| 94% |', '| 47% |')!r}"]  # fmt: skip


def _page(root: Path, spec: str, text: str, run: bool = False) -> Path:
    """A document page.md and its spec docs/figures/page.toml under root (with run-2's default sweep as
    run.json when asked): the smallest tree the engine reads."""
    (root / "docs" / "figures").mkdir(parents=True)
    if run:
        shutil.copy(ROOT / RUN2_DEFAULT, root / "run.json")
    (root / "docs" / "figures" / "page.toml").write_text('doc = "page.md"\n' + spec, encoding="utf-8")
    page = root / "page.md"
    page.write_text(text, encoding="utf-8")
    return page


def test_writing_restores_a_block_and_leaves_claims_to_the_author(tmp_path) -> None:
    """Writing fills a block from its files; a claim is only reported, never rewritten."""
    page = _page(tmp_path, '[files]\nrun = "run.json"\n'
                 '[[block]]\nname = "one"\ntemplate = "ceiling {n(run.mbps(\'cuda/raw_pinned/copy\', 1))} MB/s"\n'
                 '[[claim]]\nquote = "reads 10.4 GB/s"\ntemplate = "reads {gb(run.mbps(\'cuda/raw_pinned/copy\', 1))} GB/s"\n',
                 "It reads 10.4 GB/s.\n\n<!-- figures: one -->\nold\n<!-- /figures -->\n", run=True)  # fmt: skip
    problems = figures.Figures(root=tmp_path).check(write=True)
    assert page.read_text(encoding="utf-8") == "It reads 10.4 GB/s.\n\n<!-- figures: one -->\nceiling 10,492 MB/s\n<!-- /figures -->\n"
    assert [str(p) for p in problems] == ["page.md:1: says 'reads 10.4 GB/s', the files give 'reads 10.5 GB/s' (run.json)"]


def test_a_missing_quote_marker_series_or_point_is_named(tmp_path) -> None:
    _page(tmp_path, '[files]\nrun = "run.json"\n'
          '[[block]]\nname = "absent"\ntemplate = "x"\n'
          '[[block]]\nname = "point"\ntemplate = "{run.mbps(\'cuda/raw_pinned/copy\', 3)}"\n'
          '[[claim]]\nquote = "not in the page"\ntemplate = "not in the page"\n'
          '[[claim]]\nquote = "here"\ntemplate = "{run.mbps(\'tf/eager/copy\', 1)}"\n',
          "here\n<!-- figures: point -->\n<!-- /figures -->\n", run=True)  # fmt: skip
    said = sorted(str(p) for p in figures.Figures(root=tmp_path).check())
    assert said[0] == "page.md:1: block absent (page.toml) has no <!-- figures: absent --> marker"
    assert said[1].startswith("page.md:1: claim 'here': run.json: 0 series match 'tf/eager/copy' (the file has: cuda/raw_pinned/copy@cuda:0,")
    assert said[2] == "page.md:1: quote not found: 'not in the page'"
    assert said[3] == "page.md:2: block point: run.json: cuda/raw_pinned/copy has no measured point at batch 3"


@pytest.mark.parametrize("template, expected", [
    ("a {1 + 1} b", [(2, 9, "1 + 1", "")]),
    ("{x:.3f}", [(0, 7, "x", ".3f")]),
    ("{{literal}} {f('}', {'k': 1}['k'])}", [(12, 35, "f('}', {'k': 1}['k'])", "")]),
    ("{grab(t, r'\\d+: (x)')}", [(0, 22, "grab(t, r'\\d+: (x)')", "")]),
])  # fmt: skip
def test_template_fields_end_at_their_own_brace(template, expected) -> None:
    assert figures.fields(template) == expected


def test_formats_write_figures_as_the_documents_do() -> None:
    assert (figures.n(55508.3), figures.n(1.25, 1), figures.x(0.2383), figures.pct(0.994), figures.pct(0.101, 1, True)) == (
        "55,508", "1.2", "0.24×", "99%", "+10.1%")  # fmt: skip
    assert figures.gb(55508) == "55.5"
    assert figures.span([0.17, 0.08, 0.1], figures.x) == "0.08–0.17×"
    assert figures.span([0.161, 0.27], figures.pct) == "16–27%"
    assert figures.span([9990, 8996], figures.n) == "8,996–9,990"
    assert figures.span([0.991, 0.994], figures.pct) == "99%"
    with pytest.raises(figures.FigureError):
        figures.span([])


def test_a_lost_end_marker_is_named_and_nothing_is_written(tmp_path) -> None:
    """Without its end marker a block would reach to the next block's end and take the prose between
    with it: the check names the block, and writing leaves the document as it was."""
    text = "<!-- figures: one -->\nold\n\nProse that must stay.\n\n<!-- figures: two -->\nold\n<!-- /figures -->\n"
    page = _page(tmp_path, '[[block]]\nname = "one"\ntemplate = "1"\n[[block]]\nname = "two"\ntemplate = "2"\n', text)
    problems = figures.Figures(root=tmp_path).check(write=True)
    assert page.read_text(encoding="utf-8") == text
    assert "page.md:1: block one: no <!-- /figures --> before the next block or the end" in [str(p) for p in problems]


def test_the_command_checks_by_default_and_writes_only_when_asked(tmp_path, monkeypatch, capsys) -> None:
    page = _page(tmp_path, '[[block]]\nname = "one"\ntemplate = "{1 + 1}"\n', "<!-- figures: one -->\n<!-- /figures -->\n")
    monkeypatch.setattr(figures, "ROOT", tmp_path)
    monkeypatch.setattr(figures.Figures.__init__, "__defaults__", (tmp_path, None))
    assert figures.main([]) == 1 and page.read_text(encoding="utf-8") == "<!-- figures: one -->\n<!-- /figures -->\n"
    assert "1 blocks and claims checked against their files; 1 problem" in capsys.readouterr().err
    assert figures.main(["--write"]) == 0 and page.read_text(encoding="utf-8") == "<!-- figures: one -->\n2\n<!-- /figures -->\n"
