# SPDX-License-Identifier: GPL-2.0
# Common helpers for the dmabuf-rw pipeline scripts.  Sourced, not run.

# shellcheck shell=bash
# shellcheck disable=SC2034 # variables used by the scripts that source this

DMABUF_RW_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DMABUF_RW_CACHE=${DMABUF_RW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dmabuf-rw}

# The pinned base: Debian's linux-source-7.2 package.
BASE_PKG=linux-source-7.2
BASE_VERSION=${BASE_VERSION:-7.2.13-1}
# Suites searched for the package, in order.
BASE_SUITES=(sid trixie-backports)

# The peer regression's liburing: Debian's source package, its own test
# suite (ci/fetch-liburing).
LIBURING_VERSION=${LIBURING_VERSION:-2.9-1}
LIBURING_SUITES=(trixie sid)

export DMABUF_RW_ROOT DMABUF_RW_CACHE

# shellcheck source=ci/verdict.sh
. "$DMABUF_RW_ROOT/ci/verdict.sh"

log() {
	printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2
}

die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# stage_fail STAGE REASON LOGFILE: report a failed stage and exit.
stage_fail() {
	printf 'FAILED stage "%s": %s\n' "$1" "$2" >&2
	# For a caller that reports it: stage, reason, log, tab separated.
	# The first failure is the cause: a stage around it does not replace it.
	[[ -n "${STAGE_FAILED:-}" && ! -e "$STAGE_FAILED" ]] &&
		printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}" >"$STAGE_FAILED"
	[[ -n "${3:-}" ]] && printf '  log: %s\n' "$3" >&2
	if [[ -n "${3:-}" && -f "$3" ]]; then
		printf '  last lines:\n' >&2
		tail -n 15 "$3" | sed 's/^/    | /' >&2
	fi
	exit 1
}

# build_error LOG: the first error of a kernel build's log (compiler,
# linker, modpost or make), for a one-line verdict.
build_error() {
	grep -m 1 -E 'error:|ERROR: modpost: |undefined reference|Error [0-9]' "$1" ||
		echo "make failed, no error line in $1"
}

# stage_run NAME LOGFILE CMD...: run a pipeline stage, timed, its output
# to LOGFILE; or, with LOGFILE "-", a stage whose result is the last line
# of its stdout (printed) and whose progress goes to stderr.  A stage that
# fails stops the script with the stage's name (stage_fail).
stage_run() {
	local name=$1 logf=$2 start rc=0 out
	shift 2
	start=$(date +%s)
	log "$name ..."
	if [[ "$logf" == - ]]; then
		out=$("$@") || rc=$?
		((rc == 0)) || stage_fail "$name" "exited $rc (messages above)"
	else
		"$@" >"$logf" 2>&1 || rc=$?
		((rc == 0)) || stage_fail "$name" "command exited $rc: $*" "$logf"
	fi
	log "$name done in $(($(date +%s) - start)) s"
	if [[ "$logf" == - ]]; then
		printf '%s\n' "$out" | tail -n 1
	fi
}

# worktree_once REPO TREE COMMIT WHAT: make TREE a detached work tree of
# REPO at COMMIT unless it is one already (a cache kept from an earlier
# run; the caller resets it); WHAT names it in the log.
worktree_once() {
	[[ -e "$2/.git" ]] && return 0
	log "creating the work tree of $4 (once): $2"
	git -C "$1" worktree prune
	git -C "$1" worktree add -q --detach "$2" "$3"
}

# sha256 of the listed files' contents and names, short form.
content_key() {
	(
		for f in "$@"; do
			printf '%s\n' "${f##*/}"
			cat "$f"
		done
	) | sha256sum | cut -c1-16
}

# revision_patches DIR: the revision's patch files in order, one a line:
# from DIR/series when present, else DIR/*.patch sorted, skipping files
# without a diff (cover letters).
revision_patches() {
	local dir=$1 p
	if [[ -f "$dir/series" ]]; then
		while read -r p; do
			[[ -z "$p" || "$p" == \#* ]] && continue
			[[ -f "$dir/$p" ]] || die "$dir/series lists $p, which is missing"
			printf '%s\n' "$dir/$p"
		done <"$dir/series"
	else
		for p in "$dir"/*.patch; do
			[[ -f "$p" ]] || continue
			grep -q '^diff --git ' "$p" && printf '%s\n' "$p"
		done
	fi
}

# The project's default (best) revision.
default_revision() {
	printf '%s\n' "$DMABUF_RW_ROOT/kernel/series/rfc-v2.3"
}

# revision_name DIR: cache name for a revision directory.
revision_name() {
	local dir
	dir=$(cd "$1" && pwd)
	printf '%s-%s\n' "$(basename "$dir")" \
		"$(printf '%s' "$dir" | sha256sum | cut -c1-8)"
}

# Directories and files of the project copied into the kernel tree at the
# same path.
OVERLAY_DIRS=(lib/kunit-dmatok lib/test_dmabuf_exporter.c lib/test_dmabuf_exporter_uapi.h
	tools/testing/selftests/dmabuf-rw)

# The first Debian archive URI of the system's configuration (one-line
# .list or deb822 .sources), skipping security and third-party entries.
system_mirror() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f "$f" ]] || continue
		awk '$1 == "deb" {
			for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) break
			if ($i ~ /\/debian\/?$/ && $(i + 1) !~ /security/) print $i
		}' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f "$f" ]] || continue
		awk 'BEGIN { RS = ""; FS = "\n" } {
			uri = ""; suites = ""; types = ""
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^URIs:/) { sub(/^URIs:[ \t]*/, "", $i); uri = $i }
				if ($i ~ /^Suites:/) suites = $i
				if ($i ~ /^Types:/) types = $i
			}
			split(uri, u, /[ \t]+/)
			if (types ~ /deb( |$)/ && u[1] ~ /\/debian\/?$/ && suites !~ /security/)
				print u[1]
		}' "$f"
	done
}

# private_apt DIR: an apt configuration of its own in DIR, on the
# system's Debian mirror, so that fetching a package leaves the system's
# apt state alone.  Sets APT_DIR and APT_OPTS (for apt-get and
# apt-cache); private_apt_suite then selects the suite.
private_apt() {
	APT_DIR=$1
	APT_MIRROR=$(system_mirror | awk 'NR == 1')
	[[ -n "$APT_MIRROR" ]] || die "no Debian mirror found in /etc/apt/sources.list{,.d}"
	APT_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
	[[ -f "$APT_KEYRING" ]] ||
		die "$APT_KEYRING missing: apt-get install debian-archive-keyring"
	mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/archives/partial"
	APT_OPTS=(
		-o "Dir::Etc::SourceList=$APT_DIR/sources.list"
		-o "Dir::Etc::SourceParts=/dev/null"
		-o "Dir::State::Lists=$APT_DIR/lists"
		-o "Dir::Cache=$APT_DIR"
		-o "Dir::Cache::archives=$APT_DIR/archives"
		-o "APT::Get::List-Cleanup=false"
		-o "Acquire::Languages=none"
	)
}

# private_apt_suite TYPE SUITE: use SUITE (TYPE deb or deb-src) of the
# mirror's main component, and update its lists; the log is
# APT_DIR/update-TYPE-SUITE.log.
private_apt_suite() {
	printf '%s [signed-by=%s] %s %s main\n' "$1" "$APT_KEYRING" "$APT_MIRROR" "$2" \
		>"$APT_DIR/sources.list"
	apt-get "${APT_OPTS[@]}" update >"$APT_DIR/update-$1-$2.log" 2>&1
}

# write_inventory OUT TREE BUILD APPEND TESTS: the expected inventory of a
# guest run (ci/inventory) into OUT, for ci/report: APPEND is the guest's
# extra command line (kunit.enable=0 and dmabuf_rw.kselftests=off turn a
# half off), TESTS the runner's arguments (run_tests.sh --tests).
write_inventory() {
	local out=$1 tree=$2 build=$3 append=" $4 " tests=$5 args=()
	[[ "$append" == *" kunit.enable=0 "* ]] && args+=(--no-kunit)
	if [[ "$append" == *" dmabuf_rw.kselftests=off "* ]]; then
		args+=(--tests off)
	elif [[ -n "$tests" ]]; then
		args+=(--tests "$tests")
	fi
	"$DMABUF_RW_ROOT/ci/inventory" "${args[@]}" "$tree" "$build" >"$out"
}

# The kselftest runner's limit per program is the settings file's for
# the normal kernel (and for a user's machine); the debug kernel runs
# several times slower and gets DEBUG_KSFT_TIMEOUT seconds instead.
DEBUG_KSFT_TIMEOUT=600

# guest_runner_args KERNEL TESTS: the runner's arguments for the guest
# (comma separated, as run_tests.sh --tests takes them) on the normal or
# debug KERNEL: TESTS, with the debug kernel's limit unless TESTS sets one.
guest_runner_args() {
	local tests=$2
	if [[ "$1" == debug && ",$tests," != *",-o,"* && ",$tests," != *",--override-timeout,"* ]]; then
		tests="-o,$DEBUG_KSFT_TIMEOUT${tests:+,$tests}"
	fi
	printf '%s\n' "$tests"
}

# kernel_fragments KIND: sets FRAGMENTS, the config fragments ci/build
# takes after guest.config for the normal or the debug kernel (nvme as
# modules, KASAN, lockdep, ...: kernel/configs/debug.config).
kernel_fragments() {
	FRAGMENTS=()
	[[ "$1" == debug ]] &&
		FRAGMENTS=("$DMABUF_RW_ROOT/kernel/configs/modules.config"
			   "$DMABUF_RW_ROOT/kernel/configs/debug.config")
	return 0
}

# guest_cell DIR TREE BUILD KIND IOMMU LIMIT APPEND TESTS: one guest run,
# judged.  BUILD's kernel and initramfs boot in the cell KIND:IOMMU
# (KIND normal or debug) for at most LIMIT s, with APPEND on the kernel's
# command line and TESTS (comma separated) for the kselftest runner.
# Appends the cell to DIR/run-info, writes the expected inventory, runs
# the guest and ci/report: DIR has results.tsv, table.txt, report.txt
# and guest-seconds.  The status is the report's.
guest_cell() {
	local dir=$1 tree=$2 build=$3 kind=$4 iommu=$5 limit=$6 append=$7
	local tests=$8 runner start rc=0
	{
		printf 'iommu:     %s\n' "$iommu"
		printf 'kernel:    %s\n' "$kind"
		printf 'tree:      %s\n' "$tree"
		printf 'build:     %s\n' "$build"
		if grep -q '^CONFIG_BLK_DEV_NVME=m' "$build/.config"; then
			printf 'nvme:      module\n'
		else
			printf 'nvme:      built-in\n'
		fi
	} >>"$dir/run-info"
	sed 's/^/  /' "$dir/run-info" >&2

	# What the guest must report, for ci/report to check.
	stage_run inventory - write_inventory "$dir/expected.tsv" "$tree" "$build" \
		"$append" "$tests" >/dev/null
	log "inventory: $(cut -f 1 "$dir/expected.tsv" | sort -u | wc -l) suites and programs, $(wc -l <"$dir/expected.tsv") test cases expected ($dir/expected.tsv)"

	runner=$(guest_runner_args "$kind" "$tests")
	[[ -n "$runner" ]] && append+=" dmabuf_rw.tests=$runner"
	start=$(date +%s)
	log "guest: booting (iommu $iommu, limit ${limit} s; console: $dir/console.log)"
	"$DMABUF_RW_ROOT/ci/guest-run" --kernel "$build/arch/x86/boot/bzImage" \
		--initrd "$build/initramfs.cpio.gz" --out "$dir" \
		--iommu "$iommu" --timeout "$limit" --append "$append" || true
	echo "$(($(date +%s) - start))" >"$dir/guest-seconds"
	log "guest: $(cat "$dir/guest-status") after $(cat "$dir/guest-seconds") s"

	"$DMABUF_RW_ROOT/ci/report" "$dir" "$tree" >"$dir/table.txt" || rc=$?
	{
		cat "$dir/run-info"
		printf 'guest:     %s\n\n' "$(cat "$dir/guest-status")"
		cat "$dir/table.txt"
	} >"$dir/report.txt"
	return "$rc"
}
