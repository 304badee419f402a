package raft

import "testing"

// A member fenced by the state check is not promotable on any path: asked by
// its leader to take over (MsgTimeoutNow), or reaching its election timeout,
// it does not campaign, where the same member unfenced does.
func TestFenceStateDivergedBlocksTimeoutNowAndTicks(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		for _, via := range []string{"timeout-now", "ticks"} {
			f := mustNode(t, testConfig(3, logOf(1, 1, 2)), Boot{HardState: HardState{Term: 2}, Verdict: VerdictClean})
			if err := f.Step(Message{Type: MsgApp, From: 2, To: 3, Term: 2, PrevLogIndex: 3, PrevLogTerm: 2, Commit: 3, LeaderCommit: 3}); err != nil {
				t.Fatal(err)
			}
			if s := f.Status(); s.Lead != 2 {
				t.Fatalf("after the leader's heartbeat: lead %d, want 2", s.Lead)
			}
			f.Ready()
			if fenced {
				f.FenceStateDiverged("test")
			}
			switch via {
			case "timeout-now":
				if err := f.Step(Message{Type: MsgTimeoutNow, From: 2, To: 3, Term: 2}); err != nil {
					t.Fatal(err)
				}
			case "ticks":
				for range 4 * f.cfg.ElectionTick {
					f.Tick()
				}
			}
			campaigned := f.Status().Role != RoleFollower || f.Status().HardState.Term != 2
			if campaigned != !fenced {
				t.Errorf("fenced %v, %s: role %v at term %d; want a campaign only when unfenced", fenced, via, f.Status().Role, f.Status().HardState.Term)
			}
		}
	}
}
