package wal

// The recovery decision table (TigerBeetle's recovery_cases style). Recovery reads the
// segments in generation order; for each it decides a role and scans its batches until
// something stops it, then looks the (role, end, evidence) triple up here. The first
// row whose action is actionStop ends the log with that row's verdict. Every
// combination matches exactly one row; TestRecoveryCasesExhaustive checks it, and
// TestRecoveryCaseRows drives each row from a disk image.

// segmentRole is where a segment sits among those recovery reads.
type segmentRole uint8

const (
	roleNone  segmentRole = iota + 1 // no segment at all
	roleInner                        // a later segment exists: its creation vouches for this one
	roleLast                         // the newest segment: its tail may hold an unsynced batch
)

// scanEnd is what stopped the scan of a segment.
type scanEnd uint8

const (
	endEmpty         scanEnd = iota + 1 // no segment on disk
	endLimit                            // reached the index where a later segment takes over
	endSuperseded                       // a later segment starts at or below this one's first index
	endFull                             // no room for another batch header
	endZero                             // an all-zero batch slot: never written
	endStale                            // a valid batch header of an earlier generation (earlier life of a reused file)
	endHeaderDamaged                    // a batch slot neither zero, stale nor valid
	endBodyDamaged                      // a valid batch header whose records or body fail verification
	endMisfit                           // a valid current-generation header that does not continue the log
	endSegmentHeader                    // the segment header (or the next one's) fails verification
	endLink                             // the segment header does not continue the earlier segments' log
)

var scanEndNames = map[scanEnd]string{
	endEmpty: "empty", endLimit: "limit", endSuperseded: "superseded", endFull: "full",
	endZero: "zero", endStale: "stale", endHeaderDamaged: "header-damaged",
	endBodyDamaged: "body-damaged", endMisfit: "misfit", endSegmentHeader: "segment-header",
	endLink: "link",
}

func (e scanEnd) String() string { return scanEndNames[e] }

// evidence matches whether a valid current-generation batch header lies behind the stop.
type evidence uint8

const (
	evidenceAny evidence = iota
	evidenceYes
	evidenceNo
)

type action uint8

const (
	actionContinue action = iota + 1 // the segment is whole; go on with the next one
	actionStop                       // the log ends here with the row's verdict
	actionAssert                     // impossible input: a bug in recovery itself
)

type recoveryCase struct {
	label    string
	roles    []segmentRole // nil matches any
	ends     []scanEnd
	evidence evidence
	action   action
	verdict  Verdict
	why      string
}

var (
	bothRoles   = []segmentRole{roleInner, roleLast}
	cleanEnds   = []scanEnd{endFull, endZero, endStale}
	damagedEnds = []scanEnd{endHeaderDamaged, endBodyDamaged}
)

// recoveryCases is the decision table. Legend in docs/wal.md, "Recovery decision table".
var recoveryCases = []recoveryCase{
	{"R1", []segmentRole{roleNone}, []scanEnd{endEmpty}, evidenceAny, actionStop, Clean,
		"no segment: an empty first-boot log is not corruption"},
	{"R2", []segmentRole{roleInner}, []scanEnd{endLimit}, evidenceAny, actionContinue, Clean,
		"the segment holds every record up to where a later segment takes over"},
	{"R3", []segmentRole{roleInner}, []scanEnd{endSuperseded}, evidenceAny, actionContinue, Clean,
		"a later segment (suffix truncation or reset) replaced all of it"},
	{"R4", []segmentRole{roleInner}, append(append([]scanEnd{}, cleanEnds...), damagedEnds...), evidenceAny, actionStop, Truncated,
		"a later segment exists, created only after this one was fdatasync'd: records it vouches for are missing"},
	{"R5", []segmentRole{roleLast}, cleanEnds, evidenceNo, actionStop, Clean,
		"the log ends at a batch boundary"},
	{"R6", []segmentRole{roleLast}, damagedEnds, evidenceNo, actionStop, Ambiguous,
		"a damaged last batch that nothing vouches for: torn before its fdatasync, or synced and damaged at rest (the ambiguous case)"},
	{"R7", []segmentRole{roleLast}, []scanEnd{endZero, endStale, endHeaderDamaged, endBodyDamaged}, evidenceYes, actionStop, Truncated,
		"a valid batch lies behind the break, written only after the broken one was fdatasync'd"},
	{"R8", bothRoles, []scanEnd{endMisfit}, evidenceAny, actionStop, Truncated,
		"a current-generation batch that does not continue the log: misdirected or damaged"},
	{"R9", bothRoles, []scanEnd{endSegmentHeader}, evidenceAny, actionStop, Truncated,
		"a segment header fails verification; it was fdatasync'd before the file got its name"},
	{"R10", bothRoles, []scanEnd{endLink}, evidenceAny, actionStop, Truncated,
		"a segment does not continue the log of the segments before it"},
	{"A1", []segmentRole{roleLast}, []scanEnd{endLimit, endSuperseded}, evidenceAny, actionAssert, Truncated,
		"the last segment has no later segment to take over from it"},
	{"A2", []segmentRole{roleLast}, []scanEnd{endFull}, evidenceYes, actionAssert, Truncated,
		"a full segment has no room behind its end"},
	{"A3", []segmentRole{roleNone}, []scanEnd{endLimit, endSuperseded, endFull, endZero, endStale, endHeaderDamaged,
		endBodyDamaged, endMisfit, endSegmentHeader, endLink}, evidenceAny, actionAssert, Truncated,
		"no segment, yet a scan result"},
	{"A4", bothRoles, []scanEnd{endEmpty}, evidenceAny, actionAssert, Truncated,
		"a segment, yet nothing scanned"},
}

func (c recoveryCase) matches(role segmentRole, end scanEnd, ev bool) bool {
	roleOK := c.roles == nil
	for _, r := range c.roles {
		roleOK = roleOK || r == role
	}
	endOK := false
	for _, e := range c.ends {
		endOK = endOK || e == end
	}
	evOK := c.evidence == evidenceAny || (c.evidence == evidenceYes) == ev
	return roleOK && endOK && evOK
}

// decide looks up the single row for a segment's scan. An input that matches an assert
// row, or no row or several, is a bug in recovery, not in the disk.
func decide(role segmentRole, end scanEnd, ev bool) recoveryCase {
	var found []recoveryCase
	for _, c := range recoveryCases {
		if c.matches(role, end, ev) {
			found = append(found, c)
		}
	}
	assert(len(found) == 1, "recovery input role=%d end=%s evidence=%v matches %d rows", role, end, ev, len(found))
	assert(found[0].action != actionAssert, "recovery reached impossible row %s: %s", found[0].label, found[0].why)
	return found[0]
}
