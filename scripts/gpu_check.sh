#!/usr/bin/env bash
# The GPU check (benchmarks/gpu_check.py) on a GPU machine that has PyTorch, Lightning, torchmetrics and the rest of
# the template's needs but not jsonargparse (the template's data modules and LightningCLI import it), and reaches no
# package registry: from this repository alone, with the wheels fetched beforehand.
#
#   bash scripts/gpu_check.sh fetch               # here, where pip reaches PyPI: the missing wheels into .wheels/
#   bash scripts/gpu_check.sh run OUT_DIR [ARGS]  # there, with .wheels/ copied along: installs them offline into a
#                                                 # scratch folder, then the check under a 5-minute timeout;
#                                                 # gpu_check.json, gpu_check.txt and gpu_check.log land in OUT_DIR
#
# ARGS go to benchmarks/gpu_check.py (--only precision,data; --dry-run on a CPU). PYTHON picks the interpreter
# (run: python3; fetch: .venv/bin/python if there, for the versions the tests ran against). GPU_CHECK_TIMEOUT
# overrides the 300 s. Where jsonargparse already imports, run installs nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

WHEELS=.wheels
# jsonargparse with its `signatures` extra, which LightningCLI asks for; their other needs (PyYAML,
# typing-extensions) come with Lightning. One version of each: two in the folder stop the whole install.
PACKAGES=(jsonargparse docstring-parser typeshed-client)
TARGET_PYTHON=${TARGET_PYTHON:-3.12}  # the GPU machine's Python; the wheels are pure Python (py3-none-any)

usage() {
	echo "usage: bash scripts/gpu_check.sh fetch | run OUT_DIR [gpu_check.py arguments]" >&2
	exit 2
}

fetch() {
	local python=${PYTHON:-}
	if [[ -z $python ]]; then
		if [[ -x .venv/bin/python ]]; then python=.venv/bin/python; else python=python3; fi
	fi
	local specs=() package version
	for package in "${PACKAGES[@]}"; do
		# The version installed here (what the tests ran against), else whatever PyPI serves.
		version=$("$python" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$package" \
			2>/dev/null) || version=""
		specs+=("$package${version:+==$version}")
	done
	rm -rf "$WHEELS"
	"$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version "$TARGET_PYTHON" \
		--dest "$WHEELS" "${specs[@]}"
	echo "gpu_check.sh: $(ls "$WHEELS" | tr '\n' ' ')in $WHEELS/ ($(du -sh "$WHEELS" | cut -f1)); copy it along"
}

run() {
	local out=${1:-}
	[[ -n $out ]] || usage
	shift
	local python=${PYTHON:-python3}
	mkdir -p "$out"
	site=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check_site.XXXXXX") # global: the EXIT trap removes it
	trap 'rm -rf "$site"' EXIT
	if ! "$python" -c "import jsonargparse, docstring_parser, typeshed_client" 2>/dev/null; then
		if ! compgen -G "$WHEELS/*.whl" >/dev/null; then
			echo "gpu_check.sh: error: $python has no jsonargparse and $WHEELS/ holds no wheels: run" \
				"'bash scripts/gpu_check.sh fetch' where pip reaches PyPI, and copy $WHEELS/ along" >&2
			exit 2
		fi
		PIP_ROOT_USER_ACTION=ignore "$python" -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --target "$site" \
			"$WHEELS"/*.whl
	fi
	export PYTHONPATH="$PWD/src:$site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
	# The check writes its JSON after every fit, so what a timeout stops still leaves what was measured.
	timeout --kill-after=15 "${GPU_CHECK_TIMEOUT:-300}" "$python" benchmarks/gpu_check.py --out "$out" "$@" \
		2>&1 | tee "$out/gpu_check.log"
}

case ${1:-} in
fetch) fetch ;;
run)
	shift
	run "$@"
	;;
*) usage ;;
esac
