package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/durableraft/durableraft/impl/server"
)

const membersUsage = `raftctl members [list]                  the members (voters and learners) in force
raftctl members add ID PEER_ADDR         add node ID as a learner at PEER_ADDR; prints the
                                         raftd flags the new node joins with
raftctl members promote [--wait D] ID    make learner ID a voter (refused until it has
                                         caught up; --wait retries that for up to D)
raftctl members remove [--wait D] ID     remove member ID (its id is never reused)
Admin role with TLS. --wait also retries config_pending and config_own_term.
`

// members runs the members subcommands (POST /v1/members; docs/raftd.md).
func (e *env) members(args []string) int {
	if len(args) == 0 || args[0] == "list" {
		if len(args) > 1 {
			fmt.Fprint(e.err, membersUsage)
			return 2
		}
		return e.membersList()
	}
	op, args := args[0], args[1:]
	fs := flag.NewFlagSet("members "+op, flag.ContinueOnError)
	fs.SetOutput(e.err)
	fs.Usage = func() { fmt.Fprint(e.err, membersUsage) }
	wait := fs.Duration("wait", 0, "retry a transient refusal (learner_behind, config_pending, config_own_term) for up to this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	args = fs.Args()
	want := map[string]int{"add": 2, "promote": 1, "remove": 1}
	n, ok := want[op]
	if !ok || len(args) != n {
		fmt.Fprint(e.err, membersUsage)
		return 2
	}
	id, err := strconv.ParseUint(args[0], 10, 64)
	if err != nil || id == 0 {
		fmt.Fprintln(e.err, "raftctl members: ID is a positive number")
		return 2
	}
	req := server.ChangeRequest{Op: op, ID: id}
	if op == "add" {
		req.PeerAddr = args[1]
	}
	body, _ := json.Marshal(req)
	if _, _, err := server.DecodeChange(body); err != nil {
		fmt.Fprintln(e.err, "raftctl members:", err)
		return 2
	}
	deadline := time.Now().Add(*wait)
	for {
		code, b, rc := e.postChange(body)
		if rc == 0 {
			return e.printChange(b)
		}
		transient := slices.Contains([]string{server.CodeLearnerBehind, server.CodeConfigPending, server.CodeConfigOwnTerm,
			server.CodeNoLeader, server.CodeLeaderUnreachable}, code)
		if !transient || time.Now().After(deadline) {
			printRefusal(e, b)
			return rc
		}
		time.Sleep(100 * time.Millisecond) // a bounded retry of a refusal that nothing was appended for
	}
}

// postChange posts body to the first endpoint that answers; it returns the
// error code of a refusal and the exit status (written to stderr).
func (e *env) postChange(body []byte) (string, []byte, int) {
	for _, ep := range e.endpoints {
		status, b, err := e.httpDo("POST", ep, "/v1/members", body)
		if err != nil {
			fmt.Fprintf(e.err, "raftctl: %s: %v\n", ep, err)
			continue
		}
		if status == 200 {
			return "", b, 0
		}
		var eb struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Outcome string `json:"outcome"`
		}
		_ = json.Unmarshal(b, &eb)
		if eb.Outcome == "unknown" {
			return eb.Code, b, 3
		}
		return eb.Code, b, 1
	}
	return "", nil, 1
}

func (e *env) printChange(b []byte) int {
	var cb server.ChangeBody
	if err := json.Unmarshal(b, &cb); err != nil {
		fmt.Fprintf(e.err, "raftctl members: the answer does not decode: %v\n", err)
		return 1
	}
	fmt.Fprintf(e.out, "%s %d applied at index %d: voters %v learners %v\n", cb.Op, cb.ID, cb.Index, cb.Voters, cb.Learners)
	if j := cb.Join; j != nil {
		voters := make([]string, len(j.InitialVoters))
		for k, v := range j.InitialVoters {
			voters[k] = strconv.FormatUint(v, 10)
		}
		fmt.Fprintf(e.out, "start node %d with:\n  raftd --id %d --data DIR --listen-peer %s --join --join-cluster-id %s --join-initial-voters %s --peers %s\n",
			cb.ID, cb.ID, peerOf(j.Peers, cb.ID), j.ClusterID, strings.Join(voters, ","), j.Peers)
	}
	return 0
}

// peerOf is id's address in a --peers list.
func peerOf(peers string, id uint64) string {
	m, err := server.ParsePeers(peers)
	if err != nil {
		return "ADDR"
	}
	for k, v := range m {
		if uint64(k) == id {
			return v
		}
	}
	return "ADDR"
}

func (e *env) membersList() int {
	for _, ep := range e.endpoints {
		code, b, err := e.httpDo("GET", ep, "/v1/members", nil)
		if err != nil {
			fmt.Fprintf(e.err, "raftctl: %s: %v\n", ep, err)
			continue
		}
		if code != 200 {
			e.out.Write(b)
			return 1
		}
		var ms []server.Member
		if err := json.Unmarshal(b, &ms); err != nil {
			fmt.Fprintf(e.err, "raftctl members: the answer does not decode: %v\n", err)
			return 1
		}
		tw := tabwriter.NewWriter(e.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tROLE\tPEER\tCLIENT\tLEADER\tCONNECTED")
		for _, m := range ms {
			role := "voter"
			if m.Learner {
				role = "learner"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%v\t%v\n", m.ID, role, m.PeerAddr, m.ClientAddr, m.Leader, m.Connected)
		}
		tw.Flush()
		return 0
	}
	return 1
}

// printRefusal writes a refusal's code, message and outcome to stderr.
func printRefusal(e *env, b []byte) {
	var eb struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Outcome string `json:"outcome"`
	}
	if json.Unmarshal(b, &eb) != nil || eb.Code == "" {
		fmt.Fprintf(e.err, "raftctl members: no endpoint answered (%s)\n", b)
		return
	}
	fmt.Fprintf(e.err, "raftctl members: %s: %s (%s)\n", eb.Code, eb.Message, eb.Outcome)
}
