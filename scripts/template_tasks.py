"""Copy each library task module into the project template as the ``task.py`` a generated project owns.

``src/litstarter/tasks/<task>.py`` is the one source; ``src/litstarter/_template/project/src/{{ package }}/`` holds a
byte-for-byte copy per task, under a file name that copier renders to ``task.py`` for that task alone (and to
nothing, so not at all, for the others). tests/test_template.py fails when a copy drifts from its module.

    python scripts/template_tasks.py          # write the copies
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "src" / "litstarter" / "tasks"
PACKAGE = ROOT / "src" / "litstarter" / "_template" / "project" / "src" / "{{ package }}"
#: The library module each task's project copies.
MODULES = {task: f"{task}.py" for task in ("classification", "multilabel", "regression", "segmentation", "detection")}


def copy_path(task: str) -> Path:
    """Where the template holds ``task``'s copy: a name copier renders to ``task.py`` for that task only."""
    return PACKAGE / f"{{% if task == '{task}' %}}task.py{{% endif %}}"


def main() -> int:
    for task, module in MODULES.items():
        copy_path(task).write_bytes((TASKS / module).read_bytes())
        print(f"{copy_path(task).relative_to(ROOT)} <- src/litstarter/tasks/{module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
