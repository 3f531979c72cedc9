"""The contract's task: a multi-label contract records its task and thresholds; one without a task (every export
made before multi-label existed) reads as single-label, unchanged."""

from __future__ import annotations

import pytest

from litstarter.extras.deploy.contract import ContractError, ModelContract


def contract(**extra) -> ModelContract:
    return ModelContract(["a", "b", "c"], 3, (8, 8), (8, 8), [0.5] * 3, [0.25] * 3, **extra)


def test_a_contract_without_a_task_is_single_label_and_writes_no_task() -> None:
    single = contract()
    data = single.to_dict()
    assert "task" not in data and "thresholds" not in data
    assert data["output"]["kind"] == "logits; apply softmax for probabilities"
    read = ModelContract.from_dict(data)
    assert read.task == "single_label" and read.thresholds is None


def test_a_multilabel_contract_round_trips_its_thresholds() -> None:
    multi = contract(task="multilabel", task_state={"thresholds": [0.3, 0.5, 0.7]})
    data = multi.to_dict()
    assert data["task"] == "multilabel" and data["thresholds"] == [0.3, 0.5, 0.7]
    assert "sigmoid" in data["output"]["kind"]
    assert ModelContract.from_dict(data) == multi


@pytest.mark.parametrize("thresholds", [None, [0.5, 0.5]])
def test_a_multilabel_contract_needs_a_threshold_per_label(thresholds) -> None:
    with pytest.raises(ContractError, match="thresholds"):
        contract(task="multilabel", task_state={} if thresholds is None else {"thresholds": thresholds})
