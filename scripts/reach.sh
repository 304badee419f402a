#!/usr/bin/env bash
# The classic bugs of raft.tla, each found from scratch by the explorer
# (issue 20; docs/explorer.md, "The classic bugs"). For each rule of
# raft.tla switched off alone (-bug), an exhaustive search at bounds where
# the explorer sees it must report a violation, and the counterexample must
# replay (raftspec check-trace); then the same bounds with every rule on
# must hold, so that the violation is the bug's and not the bounds'. make
# reach runs it, and .ci/run runs make reach. About 20 s of CPU on an idle
# 2-core machine (a minute or two on a loaded one).
#
# usage: scripts/reach.sh [ROW-NAME-SUBSTRING]
#   RAFTSPEC=PATH uses that binary instead of building bin/raftspec (make
#   mutate-spec's judge runs "RAFTSPEC=mutant scripts/reach.sh holds").
set -euo pipefail
cd "$(dirname "$0")/.."
raftspec=${RAFTSPEC:-}
if [[ -z "$raftspec" ]]; then
	go build -o bin/ ./cmd/raftspec
	raftspec=bin/raftspec
fi
only=${1:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/reach.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0

# The bounds (profile raft, so that the rules are raft.tla's own):
# S2: make model's raft.tla bounds (2 servers, term 2, logs of 1).
S2="-profile raft -servers 2 -values 1 -max-term 2 -max-log 1 -max-dup 1 -max-msgs 2"
# S3: 3 servers, term 2, logs of 1, one message in flight.
S3="-profile raft -servers 3 -values 1 -max-term 2 -max-log 1 -max-dup 1 -max-msgs 1 -symmetry servers"
# DEEP: 3 servers, term 3, logs of 2: the sub-model without the network's
# drops and duplicates and without Restart, servers symmetric, merged.
DEEP="-profile raft -servers 3 -values 1 -max-term 3 -max-log 2 -max-dup 1 -max-msgs 1 -symmetry servers -merge -without DropMessage,DuplicateMessage,Restart"
# FIG8: 3 servers to term 5 (Figure 8 of the Raft paper): the sub-model in
# which, besides, server 3 never stands for election and server 2 never
# replicates (a pure follower and a leader whose entries stay its own).
FIG8="-profile raft -servers 3 -values 1 -max-term 5 -max-log 1 -max-dup 1 -max-msgs 1 -merge -without DropMessage,DuplicateMessage,Restart,Timeout@3,AppendEntries@2"
# MEMB2015: membership (docs/membership.md), 4 servers to term 4, logs of
# 1: the sub-model without the network's drops and duplicates, Restart and
# client requests, in which servers 3 and 4 never stand for election and
# server 1 never replicates; merged.
MEMB2015="-profile raft -membership -servers 4 -values 1 -max-term 4 -max-log 1 -max-dup 1 -max-msgs 1 -merge -without DropMessage,DuplicateMessage,Restart,ClientRequest,Timeout@3,Timeout@4,AppendEntries@1"
# MEMBERS: membership with every rule on, 3 servers of which 2 voters at
# first, term 3, logs of 2 (TLC agrees on the counts: tla/MC_membership_s3_v2_sub.cfg).
MEMBERS="-profile raft -membership -init-voters 2 -servers 3 -values 1 -max-term 3 -max-log 2 -max-dup 1 -max-msgs 1 -without DropMessage,DuplicateMessage,Restart"

# row NAME BUG BOUNDS: with BUG ("" for none) the run must find a
# violation (BUG set) or hold (BUG empty).
row() {
	local name=$1 bug=$2 bounds=$3
	[[ -n "$only" && "$name" != *"$only"* ]] && return 0
	local trace="$tmp/$name.ndjson" bugflag=() line status=PASS start=$SECONDS
	[[ -n "$bug" ]] && bugflag=(-bug "$bug")
	# shellcheck disable=SC2086
	line=$("$raftspec" explore $bounds "${bugflag[@]}" -workers 2 -trace "$trace" 2>/dev/null | tail -1) || true
	local took=$((SECONDS - start))
	if [[ -n "$bug" ]]; then
		if [[ "$line" != *"result=violation"* ]]; then
			status=FAIL
		elif ! "$raftspec" check-trace "$trace" >/dev/null; then
			status="FAIL(check-trace)"
		fi
	elif [[ "$line" != *"result=ok"* ]]; then
		status=FAIL
	fi
	[[ $status == PASS ]] || fail=1
	printf '%-26s %-22s %-18s %3ss  %s\n' "$name" "${bug:-(none)}" "$status" "$took" "${line% trace=*}"
}

row quorum-half            quorum-half            "$S2"
row vote-ignores-votedfor  vote-ignores-votedfor  "$S2"
row restart-forgets-vote   restart-forgets-vote   "$S3"
row vote-ignores-log-index vote-ignores-log-index "$DEEP"
row append-ignores-logok   append-ignores-logok   "$DEEP"
row commit-prior-term      commit-prior-term      "$FIG8"
row holds-deep             ""                     "$DEEP"
row holds-fig8             ""                     "$FIG8"
# Membership's rules (not "holds": mutate-spec's judge runs those rows).
row membership-2015        config-before-own-term-commit "$MEMB2015"
row membership-fixed       ""                     "$MEMBERS"

if [[ $fail -ne 0 ]]; then
	echo "reach: FAIL"
	exit 1
fi
echo "reach: every classic bug found, and the fixed protocol holds at the same bounds; the 2015 membership bug found"
