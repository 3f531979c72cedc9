"""export and infer answer a mistyped option in one line, through the real CLI, never taking a prefix for it."""

from __future__ import annotations

from tests.helpers import assert_refused, run_cases


def test_a_mistyped_or_abbreviated_option_is_one_line_with_the_nearest(tmp_path) -> None:
    cases = [
        ["infer", "--mod", "model.onnx", "--input", "x", "--output", "p.csv"],
        ["export", "--ckpt", "last.ckpt"],
        ["infer", "--model", "m.onnx", "--input", "x", "--output", "p.csv", "--top_k", "3"],
    ]
    results = run_cases(tmp_path, [{"argv": argv} for argv in cases])
    assert_refused(results[0], 2, "litstarter infer: error: --mod: no such option (did you mean --model?)")
    assert_refused(results[1], 2, "litstarter export: error: --ckpt: no such option (did you mean --ckpt_path?)")
    assert_refused(results[2], 2, "--top_k: no such option (did you mean --topk?)")
    assert all("usage:" not in r["stderr"] for r in results)
