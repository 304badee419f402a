#!/usr/bin/env bash
# Replays every failure story of the durable profile: for each -bug switch
# (alone, or with the other fixes its story needs switched off), the run
# that finds the violation at the smallest bounds we know, or the runs that
# show it is defence in depth. Counterexamples are written to
# spec/testdata/counterexamples/ and replayed with raftspec check-trace.
# docs/durable-raft.md has the table this prints. Takes ~10-20 minutes on 2 cores.
#
# usage: scripts/bugs.sh [ROW-NAME-SUBSTRING]
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/ ./cmd/raftspec
out=spec/testdata/counterexamples
mkdir -p "$out"
only=${1:-}
fail=0

S2="-servers 2 -values 1 -max-term 2 -max-log 1 -max-dup 1"
S3="-servers 3 -values 1 -max-term 3 -max-dup 1"
FULL="-servers 3 -values 1 -max-term 3 -max-log 2 -max-dup 1 -max-msgs 2 -crashes 1 -corruptions 1"

# row NAME EXPECT MODE BUGS ARGS...
#   EXPECT: an invariant name (a violation of it is expected), ok, or (MODE
#   liveness) stuck; a liveness trace goes to spec/testdata/liveness/
row() {
  local name=$1 expect=$2 mode=$3 bugs=$4; shift 4
  [[ -n "$only" && "$name" != *"$only"* ]] && return 0
  local trace="$out/$name.ndjson" bugflag=()
  [[ "$mode" == liveness ]] && trace="spec/testdata/liveness/$name.ndjson"
  [[ -n "$bugs" ]] && bugflag=(-bug "$bugs")
  local start=$SECONDS line
  line=$(bin/raftspec "$mode" -profile durable "${bugflag[@]}" "$@" -trace "$trace" 2>/dev/null | tail -1) || true
  local took=$((SECONDS - start)) verdict=ok
  [[ "$line" == *"result=violation"* ]] && verdict=$(sed 's/.*invariant=\([A-Za-z]*\).*/\1/' <<<"$line")
  [[ "$line" == *"result=stuck"* ]] && verdict=stuck
  local status=PASS
  if [[ "$verdict" != "$expect" ]]; then status=FAIL; fail=1; fi
  if [[ "$verdict" != ok ]]; then
    bin/raftspec check-trace "$trace" >/dev/null || { status="FAIL(check-trace)"; fail=1; }
  else
    rm -f "$trace"
  fi
  printf '%-44s %-8s %-20s %-6s %4ss  %s\n' "$name" "$mode" "$verdict" "$status" "$took" "$line"
}

printf '%-44s %-8s %-20s %-6s %5s  %s\n' ROW MODE VERDICT STATUS TIME "LAST LINE"

# Violations, at the smallest bounds found.
row self-counts-appended            CommittedIsDurable explore  self-counts-appended          $S2 -max-msgs 1
row follower-acks-appended          CommittedIsDurable explore  follower-acks-appended        $S2 -max-msgs 1
row release-at-leader-commit        CommittedIsDurable explore  release-at-leader-commit      $S2 -max-msgs 2 -corruptions 1
row truncated-member-votes          LeaderCompleteness explore  truncated-member-votes        $S3 -max-log 1 -max-msgs 1 -corruptions 1 -workers 2
# The stories told to the end: an acknowledged write lost (NoAckedLoss).
row follower-acks-appended.loss     NoAckedLoss        simulate follower-acks-appended        $S3 -max-log 1 -max-msgs 2 -crashes 1 -invariant NoAckedLoss -walks 100000 -depth 60
row truncated-member-votes.loss     NoAckedLoss        simulate truncated-member-votes        $FULL -invariant NoAckedLoss -walks 100000 -depth 80 -workers 2
row candidate-advertises-learned+no-promotion-fence NoAckedLoss simulate candidate-advertises-learned,no-promotion-fence $S3 -max-log 2 -max-msgs 2 -walks 300000 -depth 70 -workers 2
row self-counts-appended+no-voter-learned-floor.loss NoAckedLoss simulate self-counts-appended,no-voter-learned-floor $S3 -max-log 1 -max-msgs 2 -crashes 1 -invariant NoAckedLoss -walks 300000 -depth 60 -workers 2

# Defence in depth: no violation alone, exhaustively at the durable
# profile's exhaustive bounds and in walks at the full bounds.
for bug in candidate-advertises-learned candidate-advertises-appended no-voter-learned-floor no-promotion-fence; do
  row "$bug.alone"                  ok                 explore  "$bug"                        -servers 3 -values 1 -max-term 2 -max-log 1 -max-dup 1 -max-msgs 1 -crashes 1 -corruptions 1 -workers 2
  row "$bug.alone.walks"            ok                 simulate "$bug"                        $FULL -walks 10000 -depth 80 -workers 2
done
# The boot window: the TRUNCATED mark durable only after the cut (production).
row mark-after-cut                  CommittedIsDurable explore  mark-after-cut                -servers 2 -values 1 -max-term 2 -max-log 1 -max-dup 1 -max-msgs 1 -crashes 1 -corruptions 1 -production -invariant CommittedIsDurable
# The ambiguous tail (issue 10 item 2): a damaged last synced batch booted
# CLEAN. A whole-cluster power loss at 2 servers is one PowerLoss each.
row ambiguous-tail-clean            CommittedIsDurable explore  ambiguous-tail-clean          $S2 -max-msgs 1 -crashes 0 -corruptions 0 -power-losses 2
row ambiguous-tail-clean.loss       NoAckedLoss        simulate ambiguous-tail-clean          $S3 -max-log 1 -max-msgs 2 -crashes 0 -corruptions 0 -power-losses 1 -invariant NoAckedLoss -walks 100000 -depth 60
# The rule's other half, against the wedge: an AMBIGUOUS member that
# withholds its vote leaves no leader (raftspec liveness; not an invariant).
row ambiguous-withholds-vote        stuck              liveness ambiguous-withholds-vote      $S2 -max-msgs 1 -crashes 0 -corruptions 0 -power-losses 2
# A driver that does not sync a truncation: it needs term 3 for a conflict of
# durable entries, and walks do not reach it; exhaustive at 2 servers.
row truncation-not-synced.alone     ok                 explore  truncation-not-synced         -servers 2 -values 1 -max-term 3 -max-log 2 -max-dup 1 -max-msgs 2 -crashes 1 -corruptions 0 -workers 2 -sometimes TruncationLost
exit $fail
