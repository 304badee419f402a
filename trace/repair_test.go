package trace

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestRepairResponseForms: a RepairResponse carries the peer's durable log
// (mprefix, the spec's) or only its tip (mlastLogTerm, mlastLogIndex >= 1,
// an impl's), never both and never neither; each form round-trips.
func TestRepairResponseForms(t *testing.T) {
	for _, m := range []Message{
		{Mtype: "RepairResponse", Mterm: 3, Mprefix: []Run{{Term: 2, Values: []int{1, 4}}}, Msource: "s1", Mdest: "s2"},
		{Mtype: "RepairResponse", Mterm: 3, Mprefix: []Run{}, Msource: "s1", Mdest: "s2"},
		{Mtype: "RepairResponse", Mterm: 3, MlastLogTerm: 2, MlastLogIndex: 2, Msource: "s1", Mdest: "s2"},
		{Mtype: "RepairRequest", Mterm: 3, Msource: "s2", Mdest: "s1"},
	} {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back Message
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(back, m) {
			t.Errorf("%s read back as %+v", b, back)
		}
	}
	for name, line := range map[string]string{
		"neither":        `{"mtype":"RepairResponse","mterm":3,"msource":"s1","mdest":"s2"}`,
		"tip of index 0": `{"mtype":"RepairResponse","mterm":3,"mlastLogTerm":0,"mlastLogIndex":0,"msource":"s1","mdest":"s2"}`,
		"both":           `{"mtype":"RepairResponse","mterm":3,"mprefix":[],"mlastLogTerm":2,"mlastLogIndex":2,"msource":"s1","mdest":"s2"}`,
		"half a tip":     `{"mtype":"RepairResponse","mterm":3,"mlastLogIndex":2,"msource":"s1","mdest":"s2"}`,
		"request fields": `{"mtype":"RepairRequest","mterm":3,"mlastLogIndex":2,"msource":"s1","mdest":"s2"}`,
	} {
		var m Message
		if err := json.Unmarshal([]byte(line), &m); err == nil {
			t.Errorf("%s: %s accepted as %+v", name, line, m)
		}
	}
}
