#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the dmabuf-rw suite on one revision of the series: fetch the base
# kernel, prepare the tree, build, boot the guest on an emulated NVMe
# drive, run the KUnit suites (at boot) and the kselftests, report.

set -euo pipefail
ROOT=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=ci/lib.sh
. "$ROOT/ci/lib.sh"

usage() {
	cat <<USAGE
usage: $0 [options]

  --revision DIR   revision of the series to test (format-patch files and
                   a series file); default: kernel/series/rfc-v2.1
  --iommu MODE     strict (default), lazy, passthrough, off, or swiotlb
                   (no IOMMU, every DMA mapping bounced: swiotlb=force)
  --timeout SECS   hard limit for the guest run (default 900)
  --tests ARGS     arguments for the guest's run_kselftest.sh, comma
                   separated (e.g. -t,dmabuf-rw:dmabuf_rw_smoke)
  --append ARGS    extra guest kernel command line arguments
  --results DIR    where reports and logs go
                   (default: results/<date>-<revision>-<iommu>)
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
limit=900
tests=''
extra_args=''
results=''
while (($#)); do
	case $1 in
	--revision) revision=${2:?}; shift 2 ;;
	--iommu) iommu=${2:?}; shift 2 ;;
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
[[ -d "$revision" ]] || die "revision directory not found: $revision"
revision=$(cd "$revision" && pwd)
rev_name=$(basename "$revision")
if [[ -z "$results" ]]; then
	results=$ROOT/results/$(date +%Y%m%d-%H%M%S)-$rev_name-$iommu
fi
mkdir -p "$results"
results=$(cd "$results" && pwd)
run_start=$(date +%s)

# timed STAGE CMD...: run a pipeline stage whose output is a value on
# stdout (its progress goes to stderr); fail with the stage's name.
timed() {
	local name=$1 start out rc=0
	shift
	start=$(date +%s)
	log "$name ..."
	out=$("$@") || rc=$?
	((rc == 0)) || stage_fail "$name" "exited $rc (messages above)"
	log "$name done in $(($(date +%s) - start)) s"
	printf '%s\n' "$out" | tail -n 1
}

timed "install dependencies" "$ROOT/ci/install-deps" >/dev/null
base=$(timed "fetch base" "$ROOT/ci/fetch-base")
tree=$(timed "prepare $rev_name" "$ROOT/ci/prepare" --revision "$revision")
build=$(timed "build" "$ROOT/ci/build" "$tree")
timed "initramfs" "$ROOT/ci/initramfs" "$build" "$build/initramfs.cpio.gz" >/dev/null

base_desc=${KERNEL_SRC:+KERNEL_SRC=$base}
base_desc=${base_desc:-Debian $BASE_PKG $BASE_VERSION}
{
	printf 'base:      %s\n' "$base_desc"
	printf 'revision:  %s (%s)\n' "$rev_name" "$revision"
	printf 'iommu:     %s\n' "$iommu"
	printf 'tree:      %s\n' "$tree"
	printf 'build:     %s\n' "$build"
} >"$results/run-info"
sed 's/^/  /' "$results/run-info" >&2

append=$extra_args
[[ -n "$tests" ]] && append+=" dmabuf_rw.tests=$tests"
start=$(date +%s)
log "guest: booting (iommu $iommu, limit ${limit} s; console: $results/console.log)"
"$ROOT/ci/guest-run" --kernel "$build/arch/x86/boot/bzImage" \
	--initrd "$build/initramfs.cpio.gz" --out "$results" \
	--iommu "$iommu" --timeout "$limit" --append "$append" || true
log "guest: $(cat "$results/guest-status") after $(($(date +%s) - start)) s"

rc=0
"$ROOT/ci/report" "$results" "$tree" >"$results/table.txt" || rc=$?
{
	cat "$results/run-info"
	printf 'guest:     %s\n\n' "$(cat "$results/guest-status")"
	cat "$results/table.txt"
} >"$results/report.txt"
mkdir -p "$ROOT/results"
ln -sfn "$results" "$ROOT/results/latest"
log "reports and logs: $results (report.txt, junit.xml, console.log, results.log)"
log "total $(($(date +%s) - run_start)) s"
echo
# The table ends with the closing "N passed, N failed" line.
cat "$results/table.txt"
exit "$rc"
