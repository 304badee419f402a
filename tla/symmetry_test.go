package tla

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/spec"
)

// symmetricConfigs are bounds on which TLC with SYMMETRY and the explorer
// with -symmetry must count the same classes. The figures are TLC 2.20's on
// Ongaro's raft.tla (spec/symmetry_test.go compares the explorer with them
// without TLC); TestTLCSymmetry checks that TLC on MCSymmetry reports them
// too.
// The long ones (TLC takes minutes with SYMMETRY) run with TLC_FULL=1.
var symmetricConfigs = []struct {
	cfg                 spec.Config
	values              bool
	distinct, generated int64
	long                bool
}{
	{spec.Config{Profile: spec.ProfileRaft, Servers: 2, Values: 1, MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 2}, false, 7651, 76636, false},
	{spec.Config{Profile: spec.ProfileRaft, Servers: 2, Values: 2, MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 2}, true, 7651, 78542, false},
	{spec.Config{Profile: spec.ProfileRaft, Servers: 2, Values: 2, MaxTerm: 2, MaxLog: 2, MaxDup: 1, MaxMsgs: 2}, false, 64549, 687729, true},
	{spec.Config{Profile: spec.ProfileRaft, Servers: 2, Values: 2, MaxTerm: 2, MaxLog: 2, MaxDup: 1, MaxMsgs: 2}, true, 34349, 364982, true},
}

// symmetricCfg is the TLC config of c on MCSymmetry: servers and values as
// model values, as SYMMETRY needs.
func symmetricCfg(c spec.Config, values bool) string {
	var srv, val []string
	for i := 1; i <= c.Servers; i++ {
		srv = append(srv, fmt.Sprintf("s%d", i))
	}
	for v := 1; v <= c.Values; v++ {
		val = append(val, fmt.Sprintf("v%d", v))
	}
	sym := "ServerSymmetry"
	if values {
		sym = "ServerValueSymmetry"
	}
	return fmt.Sprintf(`SPECIFICATION Spec
CONSTANTS
    Server      = {%s}
    Value       = {%s}
    Profile     = "raft"
    Bugs        = {}
    Crashes     = 0
    Corruptions = 0
    Repair      = FALSE
    Wipes       = 0
    Production  = FALSE
    Membership  = FALSE
    InitVoters  = 0
    PowerLosses = 0
    Without     = {}
    MaxTerm     = %d
    MaxLog      = %d
    MaxDup      = %d
    MaxMsgs     = %d
SYMMETRY %s
CONSTRAINT Bound
INVARIANTS TypeOK ElectionSafety LogMatching LeaderCompleteness StateMachineSafety
CHECK_DEADLOCK FALSE
`, strings.Join(srv, ", "), strings.Join(val, ", "), c.MaxTerm, c.MaxLog, c.MaxDup, c.MaxMsgs, sym)
}

// TestTLCSymmetry runs TLC with SYMMETRY and the explorer with -symmetry
// on the same bounds: the distinct and generated counts must be equal, and
// equal to the recorded figures.
func TestTLCSymmetry(t *testing.T) {
	jar := tlcJar(t)
	for _, tc := range symmetricConfigs {
		name := tc.cfg.String() + " servers"
		if tc.values {
			name += ",values"
		}
		t.Run(name, func(t *testing.T) {
			if tc.long && os.Getenv("TLC_FULL") == "" {
				t.Skip("long: set TLC_FULL=1")
			}
			cfg := filepath.Join(t.TempDir(), "MCSymmetry.cfg")
			if err := os.WriteFile(cfg, []byte(symmetricCfg(tc.cfg, tc.values)), 0o644); err != nil {
				t.Fatal(err)
			}
			// One worker, as the recorded figures: the counts do not depend
			// on it, TLC's depth does.
			tlc := tlcResult(runTLC(t, jar, ".", 1, "-config", cfg, "MCSymmetry.tla"))
			m, err := spec.NewModel(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := spec.Explore(m, spec.Options{Workers: 2, Symmetry: true, SymmetryValues: tc.values})
			if err != nil || res.Violation != nil {
				t.Fatalf("explore: %v %+v", err, res.Violation)
			}
			g := fmt.Sprintf("distinct=%d generated=%d result=ok", res.Distinct, res.Generated)
			want := fmt.Sprintf("distinct=%d generated=%d result=ok", tc.distinct, tc.generated)
			if tlc != g || g != want {
				t.Errorf("TLC with SYMMETRY: %s\nexplorer -symmetry:  %s\nrecorded:            %s", tlc, g, want)
			}
		})
	}
}
