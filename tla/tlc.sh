#!/usr/bin/env bash
# tla/tlc.sh: TLC model checks and trace validation for tla/.
#
#   tla/tlc.sh test          quick subset for CI: the MC configs marked "ci: yes",
#                            a few traces of either version, every mutated version 2 trace
#   tla/tlc.sh all           every MC config (but "ci: long"), every trace of tla/traces
#                            (version 2, impl/, and the version 1 copies in v1/) and
#                            spec/testdata/counterexamples (make tlc)
#   tla/tlc.sh long          the MC configs marked "ci: long" (3 servers; many minutes)
#   tla/tlc.sh mc CFG...     model-check the given MC configs
#   tla/tlc.sh trace FILE... validate traces; each must be accepted
#   tla/tlc.sh reject FILE...validate traces; each must be rejected
#
# TLC is found through TLA2TOOLS_JAR, then ~/.cache/tla/tla2tools.jar. Without
# Java or the jar, "test" prints one line and exits 0; the others exit 1.
# Each MC config's "\* expect:" line holds the Go explorer's result for the
# same bounds (tla/tlc_test.go keeps it current); TLC must report the same.
set -uo pipefail

mode=${1:-test}
[ $# -gt 0 ] && shift

jar=${TLA2TOOLS_JAR:-$HOME/.cache/tla/tla2tools.jar}
reason=
if ! command -v java >/dev/null 2>&1; then
	reason="no java on PATH"
elif [ ! -f "$jar" ]; then
	reason="no tla2tools.jar (set TLA2TOOLS_JAR or put it at ~/.cache/tla/tla2tools.jar; see ../shared/tools/README.md)"
fi
if [ -n "$reason" ]; then
	echo "tlc: TLC parts skipped: $reason"
	[ "$mode" = test ] && exit 0
	exit 1
fi

here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlc.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
results=$tmp/results
: >"$results"

tlc() { # tlc WORKERS METADIR ARGS...: run TLC, output on stdout
	local workers=$1 meta=$2
	shift 2
	java -XX:+UseParallelGC -cp "$jar" tlc2.TLC -workers "$workers" -metadir "$meta" \
		-noGenerateSpecTE -nowarning "$@" 2>&1
}

expect_of() { sed -n 's/^\\\* expect: //p' "$1" | head -1; }
ci_of() { sed -n 's/^\\\* ci: //p' "$1" | head -1; }

# mc CFG: model-check one config, append a result row.
mc() {
	local cfg=$1 name out rc got want distinct generated inv status secs
	name=$(basename "$cfg" .cfg)
	want=$(expect_of "$cfg")
	secs=$SECONDS
	out=$(cd "$here" && tlc 2 "$tmp/meta-$name" -config "$cfg" MCDurableRaft.tla)
	rc=$?
	echo "$out" >"$tmp/$name.out"
	read -r generated distinct < <(echo "$out" | sed -nE 's/^([0-9]+) states generated, ([0-9]+) distinct states found.*/\1 \2/p' | tail -1)
	inv=$(echo "$out" | sed -nE 's/^Error: Invariant ([A-Za-z]+) is violated.*/\1/p' | head -1)
	if [ -n "$inv" ]; then
		got="result=violation invariant=$inv"
	elif [ $rc -eq 0 ] && echo "$out" | grep -q "No error has been found"; then
		got="distinct=$distinct generated=$generated result=ok"
	else
		got="result=error(rc=$rc)"
	fi
	status=PASS
	[ "$got" = "$want" ] || status=FAIL
	printf 'mc\t%s\t%s\t%s\t%s\t%ss\n' "$status" "$name" "$got" "$want" $((SECONDS - secs)) >>"$results"
	printf '%s %s: TLC %s (expect %s)\n' "$status" "$name" "$got" "$want"
	if [ $status = FAIL ]; then
		echo "$out" | grep -E "^Error|is violated|rror" | head -5 | sed 's/^/    /'
	fi
}

# trace FILE accept|reject: validate one trace, append a result row.
trace1() {
	local file=$1 want=$2 dir out rc got status secs name
	name=${file#"$here"/}
	dir=$(mktemp -d "$tmp/trace.XXXXXX")
	cp "$file" "$dir/trace.ndjson"
	secs=$SECONDS
	out=$(cd "$dir" && tlc 1 "$dir/meta" -config "$here/TraceDurableRaft.cfg" "$here/TraceDurableRaft.tla")
	rc=$?
	if [ $rc -eq 0 ] && echo "$out" | grep -q "No error has been found"; then
		got=accept
	elif echo "$out" | grep -q "TraceMatched: no spec step explains line"; then
		got=reject
	else
		got="error(rc=$rc)"
	fi
	status=PASS
	[ "$got" = "$want" ] || status=FAIL
	printf 'trace\t%s\t%s\t%s\t%s\t%ss\t%s\n' "$status" "$name" "$got" "$want" $((SECONDS - secs)) \
		"$(wc -l <"$file")" >>"$results"
	printf '%s %s: TLC %s (expect %s)\n' "$status" "$name" "$got" "$want"
	if [ $status = FAIL ]; then
		echo "$out" | grep -A3 -E "^Error|TraceMatched" | head -8 | sed 's/^/    /'
	fi
}
export -f trace1 tlc
export here tmp results jar

# traces WANT FILE...: validate in two parallel TLC runs (one worker each).
traces() {
	local want=$1
	shift
	[ $# -eq 0 ] && return
	printf '%s\0' "$@" | xargs -0 -n1 -P2 bash -c 'trace1 "$0" '"$want"
}

configs() { # configs CI-VALUE...: MC configs whose "ci:" is one of the values
	local cfg
	for cfg in "$here"/MC_*.cfg; do
		case " $* " in *" $(ci_of "$cfg") "*) echo "$cfg" ;; esac
	done
}

summary() {
	local fails events
	echo
	echo "== TLC summary =="
	printf '%-6s %-5s %-58s %-52s %s\n' kind status name TLC expected
	sort -t$'\t' -k1,1 -k3,3 "$results" | while IFS=$'\t' read -r kind status name got want secs _; do
		printf '%-6s %-5s %-58s %-52s %s (%s)\n' "$kind" "$status" "$name" "$got" "$want" "$secs"
	done
	events=$(awk -F'\t' '$1 == "trace" && $4 == "accept" && $2 == "PASS" {n += $7} END {print n + 0}' "$results")
	fails=$(grep -c $'\tFAIL\t' "$results")
	echo "$(grep -c '^mc' "$results") model checks, $(grep -c '^trace' "$results") traces ($events events accepted), $fails failed"
	[ "$fails" -eq 0 ]
}

case "$mode" in
test)
	for cfg in $(configs yes); do mc "$cfg"; done
	first() { ls "$here"/traces/"$1"*.ndjson | head -1; }
	traces accept "$here"/traces/cex-self-counts-appended-CommittedIsDurable.ndjson \
		"$(first walk-durable-)" "$(first walk-production-)" "$(first walk-raft-)" "$(first named-)" \
		"$(first impl/scenario-)" "$(first impl/sim-snapshots-)" "$(first v1/walk-production-)" \
		"$(first impl/scenario-membership)" "$(first impl/repair/scenario-)" "$(first witness-repair-production-)"
	traces reject "$here"/traces/mutated/*.ndjson "$(first v1/mutated/wrong-term)" \
		"$(first impl/repair/mutated/scenario-three_nodes_one_peer-released-early)"
	summary
	;;
all)
	for cfg in $(configs yes no); do mc "$cfg"; done
	# and the failure stories spec/ keeps (scripts/bugs.sh writes them)
	traces accept "$here"/traces/*.ndjson "$here"/traces/impl/*.ndjson "$here"/traces/impl/repair/*.ndjson \
		"$here"/traces/v1/*.ndjson \
		"$here"/traces/v1/impl/*.ndjson $(ls "$here"/../spec/testdata/counterexamples/*.ndjson 2>/dev/null)
	traces reject "$here"/traces/mutated/*.ndjson "$here"/traces/impl/mutated/*.ndjson \
		"$here"/traces/impl/repair/mutated/*.ndjson \
		"$here"/traces/v1/mutated/*.ndjson "$here"/traces/v1/impl/mutated/*.ndjson
	summary
	;;
long)
	for cfg in $(configs long); do mc "$cfg"; done
	summary
	;;
mc)
	for cfg in "$@"; do mc "$(cd "$(dirname "$cfg")" && pwd)/$(basename "$cfg")"; done
	summary
	;;
trace | reject)
	want=accept
	[ "$mode" = reject ] && want=reject
	files=()
	for f in "$@"; do files+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"); done
	traces $want "${files[@]}"
	summary
	;;
*)
	sed -n '2,14p' "$0"
	exit 2
	;;
esac
