# SPDX-License-Identifier: GPL-2.0
# The verdict rows, and what every tool of the pipeline says about them.
# Sourced by lib.sh, not run.
#
# A judged result is a row of three tab-separated fields: KEY STATUS
# DETAIL.  PASS passes and SKIP is skipped (ci/report has already failed
# every skip ci/allowed-skips does not allow); every other status (FAIL,
# TIMEOUT, FLAKY, NOT-RUN, ERROR, ...; an empty or unknown one too) did
# not pass.  In a table of revisions (ci/gate's gate.tsv) "-" is a key a
# revision has no row for: absent(), which the table's readers test before
# failed().

# shellcheck shell=bash

# The same predicates for awk programs over rows (see vawk).
VERDICT_AWK='
function passed(s) { return s == "PASS" }
function skipped(s) { return s == "SKIP" }
function absent(s) { return s == "-" }
function failed(s) { return s != "PASS" && s != "SKIP" }
'

# failed_status STATUS: true when STATUS did not pass.
failed_status() {
	[[ "$1" != PASS && "$1" != SKIP ]]
}

# vawk [-v VAR=VALUE]... PROGRAM [FILE|VAR=VALUE]...: awk over rows (tab
# separated) with the functions of VERDICT_AWK.
vawk() {
	local opts=()
	while (($# > 1)) && [[ "$1" == -v ]]; do
		opts+=("$1" "$2")
		shift 2
	done
	awk -F'\t' "${opts[@]}" "$VERDICT_AWK$1" "${@:2}"
}

# put_row KEY STATUS [DETAIL]: one row, on stdout.
put_row() {
	printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}"
}

# count_rows FILE...: "PASSED FAILED SKIPPED" over the rows.
count_rows() {
	vawk 'passed($2) { p++ } skipped($2) { s++ } failed($2) { f++ }
		END { print p + 0, f + 0, s + 0 }' "$@"
}

# junit_xml NAME SEP ROWS: ROWS as JUnit XML on stdout, one testsuite per
# class: the start of the key up to the first SEP.
junit_xml() {
	jq -R -r -s --arg name "$1" --arg sep "$2" '
		def failed: . != "PASS" and . != "SKIP";
		def counts: "tests=\"\(length)\" failures=\"\(map(select(.status | failed)) | length)\" skipped=\"\(map(select(.status == "SKIP")) | length)\"";
		[split("\n")[] | select(length > 0) | split("\t")
		 | {key: .[0], status: .[1], detail: (.[2] // "")}
		 | .class = (.key | split($sep)[0])] as $rows
		| "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
		  "<testsuites name=\"\($name | @html)\" \($rows | counts)>",
		  ($rows | group_by(.class)[] |
		   "<testsuite name=\"\(.[0].class | @html)\" \(counts)>",
		   (.[] | "<testcase classname=\"\(.class | @html)\" name=\"\(.key | @html)\">"
			+ (if .status == "PASS" then ""
			   elif .status == "SKIP" then "<skipped/>"
			   else "<failure message=\"\((.status + " " + .detail) | @html)\"/>" end)
			+ "</testcase>"),
		   "</testsuite>"),
		  "</testsuites>"' "$3"
}
