"""The tuner under `%matplotlib widget` (ipympl), in a real kernel: the canvas is a widget
placed in the tuner and redrawn in place on every change."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CELLS = [
    "%matplotlib widget",
    "import pandas as pd\nimport metrickit as mk\n"
    "cases = pd.read_json('data/cases/tickets.jsonl', lines=True)\n"
    "tuner = mk.widgets.tune_spec(cases, debounce_ms=0)\ntuner",
    "canvas = tuner.plot.children[0]\n"
    "assert tuner._ipympl, 'ipympl backend not detected'\n"
    "assert type(canvas).__name__ == 'Canvas', type(canvas)\n"
    "assert canvas.figure is tuner.figure()\n"
    "before = [round(b.get_width(), 6) for b in tuner._artists['bars']]\n"
    "tuner.w_accuracy.value = 0.0\ntuner.w_speed.value = 1.0\n"
    "after = [round(b.get_width(), 6) for b in tuner._artists['bars']]\n"
    "assert before != after, (before, after)\n"
    "assert tuner.ranking.iloc[0]['candidate'] == 'mini-fast'\n"
    "assert tuner.plot.children[0] is canvas  # same widget, redrawn in place\n"
    "print('ok', after)",
]


def test_tuner_redraws_in_place_with_ipympl(monkeypatch):
    import nbformat  # here, not at collection: its jsonschema import takes seconds
    from nbclient import NotebookClient

    monkeypatch.delenv("MPLBACKEND", raising=False)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    client = NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    outputs = nb.cells[-1].outputs
    assert any("ok" in out.get("text", "") for out in outputs), outputs
