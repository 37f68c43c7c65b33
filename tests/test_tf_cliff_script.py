"""scripts/tf_cliff.py: one line per series from a result file, and the settings it sweeps under."""

from __future__ import annotations

from pathlib import Path

from conftest import load_script

ROOT = Path(__file__).resolve().parent.parent
tf_cliff = load_script("tf_cliff")


def test_a_line_per_series_gives_170_171_their_ratio_and_the_faults() -> None:
    lines = tf_cliff.lines("oneDNN off", ROOT / "results/cpu-amd-epyc-2core/tf-onednn-0.json")
    assert lines == [
        "oneDNN off             eager     oneDNN off     6,471     1,013   0.16x              8,242",
        "oneDNN off             function  oneDNN off     5,689       970   0.17x              8,753",
    ]


def test_a_file_without_batch_171_says_so() -> None:
    lines = tf_cliff.lines("default", ROOT / "results/cpu-amd-epyc-2core/tf-seed.json")
    assert all(line.endswith("tf-seed.json: no batch 170/171 figure (not measured there)") for line in lines) and len(lines) == 3


def test_each_setting_clears_the_users_own_and_sets_its_own(monkeypatch, tmp_path) -> None:
    """The default row runs with neither variable, whatever the caller's shell set; the others set theirs."""
    seen = []

    def run(command, env, **kwargs):
        seen.append((env.get("TF_ENABLE_ONEDNN_OPTS"), env.get("GLIBC_TUNABLES"), command[command.index("-o") + 1]))
        return type("Done", (), {"returncode": 0, "stderr": ""})()

    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=1")
    monkeypatch.setattr(tf_cliff.subprocess, "run", run)
    for setting in tf_cliff.SETTINGS:
        tf_cliff.run(setting, 2, tmp_path)
    assert seen == [(None, None, str(tmp_path / "default-2.json")), ("0", None, str(tmp_path / "onednn-off-2.json")),
                    ("1", None, str(tmp_path / "onednn-on-2.json")),
                    ("0", tf_cliff.TUNABLES, str(tmp_path / "onednn-off-tunables-2.json")),
                    (None, tf_cliff.TUNABLES, str(tmp_path / "default-tunables-2.json"))]  # fmt: skip


def test_new_runs_are_numbered_after_the_ones_in_the_folder_and_none_is_replaced(monkeypatch, tmp_path, capsys) -> None:
    """A second call into the same folder adds runs 2 and 3; the sweep is never told to overwrite."""
    (tmp_path / "oneDNN-off-1.json".lower()).write_text("{}", encoding="utf-8")
    commands = []

    def run(command, env, **kwargs):
        commands.append(command)
        raise OSError("no xferbench here")

    monkeypatch.setattr(tf_cliff.subprocess, "run", run)
    assert tf_cliff.main(["--setting", "oneDNN off", "--out", str(tmp_path)]) == 1
    assert commands[0][commands[0].index("-o") + 1] == str(tmp_path / "onednn-off-2.json")
    assert "--overwrite" not in commands[0]
    assert "error: no xferbench here" in capsys.readouterr().err


def test_a_point_without_a_fault_count_reads_na_not_zero(tmp_path) -> None:
    """macOS and Windows give no page-fault count: 0 would read as "no fresh memory", which it is not."""
    import json

    data = json.loads((ROOT / "results/cpu-amd-epyc-2core/tf-onednn-0.json").read_text(encoding="utf-8"))
    for series in data["series"]:
        for point in series["points"]:
            point["page_faults_per_call"] = None
    (tmp_path / "mac.json").write_text(json.dumps(data), encoding="utf-8")
    assert [line.split()[-1] for line in tf_cliff.lines("default", tmp_path / "mac.json")] == ["n/a", "n/a"]
