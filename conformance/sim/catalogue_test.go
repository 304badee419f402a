package sim

import (
	"slices"
	"strings"
	"testing"
)

// TestCatalogueCoversEverySwitch: every bug switch of every layer is in a
// row of the catalogue (alone or in a combination), every row's name is
// its switches, and a row the simulator must catch names the checks that
// may catch it: a new switch cannot be left out of TestBugCatalogue.
func TestCatalogueCoversEverySwitch(t *testing.T) {
	covered := map[string]bool{}
	names := map[string]bool{}
	for _, row := range Catalogue {
		if names[row.Name] {
			t.Errorf("row %s twice", row.Name)
		}
		names[row.Name] = true
		if row.Pending != "" {
			continue
		}
		got, want := strings.Split(row.Bugs.String(), ","), strings.Split(row.Name, "+")
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("row %s has switches %s", row.Name, got)
		}
		for _, name := range strings.Split(row.Bugs.String(), ",") {
			covered[name] = true
		}
		if row.SeedsMax > 0 && len(row.By) == 0 || row.Why == "" || row.Layer == "" {
			t.Errorf("row %s: a bound without checks, or no why or layer", row.Name)
		}
	}
	for _, name := range BugNames() {
		if !covered[name] {
			t.Errorf("bug switch %s is in no row of the catalogue", name)
		}
	}
}
