#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the dmabuf-rw suite on one revision of the series: fetch the base
# kernel, prepare the tree, build, boot the guest on an emulated NVMe
# drive, run the KUnit suites (at boot) and the kselftests, report.

set -euo pipefail
ROOT=$(cd "$(dirname "$0")" && pwd)
# The matrix: debug:swiotlb is the DMA API cell (every mapping bounced,
# CONFIG_DMA_API_DEBUG checking each sync).
BENCH_MODES=off,passthrough,lazy,strict
BENCH_ARGS='-t 1 -r 3'
ALL_CELLS=normal:off,normal:strict,normal:lazy,normal:passthrough,normal:swiotlb,debug:off,debug:strict,debug:lazy,debug:swiotlb
# shellcheck source=ci/lib.sh
. "$ROOT/ci/lib.sh"

usage() {
	cat <<USAGE
usage: $0 [options]

  --revision DIR   revision of the series to test (format-patch files and
                   a series file); default: kernel/series/rfc-v2.3
  --iommu MODE     strict (default), lazy, passthrough, off, or swiotlb
                   (no IOMMU, every DMA mapping bounced: swiotlb=force)
  --debug          build and run the debug kernel (guest.config plus
                   kernel/configs/debug.config: KASAN, lockdep,
                   debugobjects, kmemleak, hung tasks, DMA API debug,
                   fault injection); its own build directory
  --timeout SECS   hard limit for the guest run (default 900)
  --tests ARGS     arguments for the guest's run_kselftest.sh, comma
                   separated (e.g. -t,dmabuf-rw:dmabuf_rw_smoke)
  --append ARGS    extra guest kernel command line arguments
  --results DIR    where reports and logs go
                   (default: results/<date>-<revision>-<iommu>[-debug])
  --matrix         run the suite in every cell of the matrix (each a
                   separate run, as with --iommu and --debug) and print
                   one table: result, guest time and the stress figures
                   per cell; the status is non-zero when a cell failed
  --cells LIST     with --matrix: the cells, comma separated, each
                   KERNEL:MODE with KERNEL normal or debug (default:
                   $ALL_CELLS)
  --bench          run the benchmark instead of the tests: one guest boot
                   per IOMMU mode, dmabuf_rw_bench on a null-backed NVMe
                   drive, one table (ci/bench); default results
                   results/<date>-<revision>-bench
  --bench-modes LIST
                   with --bench: the IOMMU modes, comma separated
                   (default: $BENCH_MODES)
  --bench-args ARGS
                   with --bench: dmabuf_rw_bench's arguments, as one argument
                   (default: "$BENCH_ARGS"; see dmabuf_rw_bench -h)
  -h, --help       this text

Environment:
  KERNEL_SRC       use this kernel tree instead of Debian's linux-source-$BASE_VERSION
  DMABUF_RW_CACHE  cache of base trees, prepared trees and builds
                   (default: ~/.cache/dmabuf-rw)

The last line is "N passed, N failed" (", N skipped"); the exit status is
non-zero when anything failed.
USAGE
}

revision=$(default_revision)
iommu=strict
debug=0
matrix=0
bench=0
iommu_set=0
bench_modes=$BENCH_MODES
bench_args=$BENCH_ARGS
cells=$ALL_CELLS
limit=900
tests=''
extra_args=''
results=''
while (($#)); do
	case $1 in
	--revision) revision=${2:?}; shift 2 ;;
	--iommu) iommu=${2:?}; iommu_set=1; shift 2 ;;
	--debug) debug=1; shift ;;
	--matrix) matrix=1; shift ;;
	--cells) cells=${2:?}; shift 2 ;;
	--bench) bench=1; shift ;;
	--bench-modes) bench_modes=${2:?}; shift 2 ;;
	--bench-args) bench_args=${2:?}; shift 2 ;;
	--timeout) limit=${2:?}; shift 2 ;;
	--tests) tests=${2:?}; shift 2 ;;
	--append) extra_args=${2:?}; shift 2 ;;
	--results) results=${2:?}; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option: $1" ;;
	esac
done
case $iommu in
strict|lazy|passthrough|off|swiotlb) ;;
*) die "--iommu must be strict, lazy, passthrough, off or swiotlb (got $iommu)" ;;
esac
((bench && (matrix || debug || iommu_set))) &&
	die "--bench runs the normal kernel in the modes of --bench-modes: not with --matrix, --debug or --iommu"
[[ "$bench" == 0 || -z "$tests$extra_args" ]] ||
	die "--bench runs the benchmark alone: not with --tests or --append"
[[ -d "$revision" ]] || die "revision directory not found: $revision"
revision=$(cd "$revision" && pwd)
rev_name=$(basename "$revision")

# stress_sum FILE WHAT: the sum of a figure the stress tests print.
stress_sum() {
	grep -o "io_during_invalidation:[0-9]* $2" "$1" 2>/dev/null |
		awk -F'[: ]' '{ s += $2 } END { print s + 0 }'
}

# One run of this script per cell, then one table.
run_matrix() {
	local dir cell kind mode out rc=0 cell_rc args status
	dir=${results:-$ROOT/results/$(date +%Y%m%d-%H%M%S)-$rev_name-matrix}
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	printf '%-19s %-6s %7s %10s %13s %10s %-6s %s\n' cell result 'guest s' \
		'stress I/O' invalidations migrations splat summary >"$dir/matrix.txt"
	IFS=, read -ra cell_list <<<"$cells"
	for cell in "${cell_list[@]}"; do
		kind=${cell%%:*} mode=${cell#*:}
		[[ "$kind" == normal || "$kind" == debug ]] ||
			die "--cells: $cell: the kernel must be normal or debug"
		out=$dir/$kind-$mode
		args=(--revision "$revision" --iommu "$mode" --timeout "$limit"
		      --results "$out")
		[[ "$kind" == debug ]] && args+=(--debug)
		[[ -n "$tests" ]] && args+=(--tests "$tests")
		[[ -n "$extra_args" ]] && args+=(--append "$extra_args")
		log "matrix: cell $cell (log: $out.log)"
		cell_rc=0
		"$0" "${args[@]}" >"$out.log" 2>&1 || cell_rc=$?
		status=PASS
		((cell_rc == 0)) || { status=FAIL; rc=1; }
		printf '%-19s %-6s %7s %10s %13s %10s %-6s %s\n' "$cell" "$status" \
			"$(cat "$out/guest-seconds" 2>/dev/null || echo -)" \
			"$(stress_sum "$out/results.log" 'I/Os')" \
			"$(stress_sum "$out/results.log" invalidations)" \
			"$(grep -o 'io_during_invalidation:[0-9]* invalidations ([0-9]* with migration)' \
				"$out/results.log" 2>/dev/null |
				awk -F'[( ]' '{ s += $4 } END { print s + 0 }')" \
			"$(awk -F'\t' '$1 == "kernel:splat" { print $2 }' "$out/results.tsv" 2>/dev/null)" \
			"$(cat "$out/summary" 2>/dev/null || echo "no report: see $out.log")" \
			>>"$dir/matrix.txt"
		log "matrix: cell $cell: $status"
	done
	mkdir -p "$ROOT/results"
	ln -sfn "$dir" "$ROOT/results/latest-matrix"
	log "matrix: $dir (matrix.txt, one directory and log per cell)"
	echo
	cat "$dir/matrix.txt"
	return "$rc"
}

if ((matrix)); then
	run_matrix
	exit $?
fi

kernel_kind=normal
((debug)) && kernel_kind=debug
kernel_fragments "$kernel_kind"
if [[ -z "$results" ]]; then
	results=$ROOT/results/$(date +%Y%m%d-%H%M%S)-$rev_name-$iommu
	((debug)) && results+=-debug
	((bench)) && results=$ROOT/results/$(date +%Y%m%d-%H%M%S)-$rev_name-bench
fi
mkdir -p "$results"
results=$(cd "$results" && pwd)
run_start=$(date +%s)

stage_run "install dependencies" - "$ROOT/ci/install-deps" >/dev/null
base=$(stage_run "fetch base" - "$ROOT/ci/fetch-base")
tree=$(stage_run "prepare $rev_name" - "$ROOT/ci/prepare" --revision "$revision")
# A kernel that does not build is the run's one result row, with the
# build's first error (ci/check-defects judges it like any other row).
build_failed() {
	local stage reason logf
	IFS=$'\t' read -r stage reason logf <"$results/stage-failed" ||
		stage=build reason="no reason recorded" logf=
	printf 'build:%s\tFAIL\t%s: %s (see %s)\n' "$kernel_kind" \
		"$stage" "$reason" "${logf:-the messages above}" >"$results/results.tsv"
	cp "$results/results.tsv" "$results/report.txt"
	mkdir -p "$ROOT/results"
	ln -sfn "$results" "$ROOT/results/latest"
	stage_fail "build ($kernel_kind kernel)" \
		"$(cut -f 3- "$results/results.tsv")"
}
rm -f "$results/stage-failed"
build=$(STAGE_FAILED=$results/stage-failed BUILD_VARIANT=${kernel_kind/normal/guest} \
	stage_run "build ($kernel_kind kernel)" - \
	"$ROOT/ci/build" "$tree" "${FRAGMENTS[@]}") || build_failed
stage_run "initramfs" - "$ROOT/ci/initramfs" "$build" "$build/initramfs.cpio.gz" >/dev/null

if ((bench)); then
	read -ra bench_words <<<"$bench_args"
	rc=0
	"$ROOT/ci/bench" --kernel "$build/arch/x86/boot/bzImage" \
		--initrd "$build/initramfs.cpio.gz" --out "$results" \
		--modes "$bench_modes" --timeout "$limit" -- "${bench_words[@]}" || rc=$?
	mkdir -p "$ROOT/results"
	ln -sfn "$results" "$ROOT/results/latest-bench"
	log "total $(($(date +%s) - run_start)) s"
	((rc == 0)) || stage_fail benchmark "a mode failed (above); logs in $results"
	exit 0
fi

base_desc=${KERNEL_SRC:+KERNEL_SRC=$base}
base_desc=${base_desc:-Debian $BASE_PKG $BASE_VERSION}
{
	printf 'base:      %s\n' "$base_desc"
	printf 'revision:  %s (%s)\n' "$rev_name" "$revision"
} >"$results/run-info"
rc=0
guest_cell "$results" "$tree" "$build" "$kernel_kind" "$iommu" "$limit" \
	"$extra_args" "$tests" || rc=$?
mkdir -p "$ROOT/results"
ln -sfn "$results" "$ROOT/results/latest"
log "reports and logs: $results (report.txt, junit.xml, console.log, results.log)"
log "total $(($(date +%s) - run_start)) s"
echo
# The table ends with the closing "N passed, N failed" line.
cat "$results/table.txt"
exit "$rc"
