package main

import (
	"strings"
	"testing"
)

// TestRelayRequestRate: a request rate or bucket the relay's clients
// could not work with (client-go's -1 meaning none at all, NaN, an empty
// bucket) is refused before anything starts, naming the flags.
func TestRelayRequestRate(t *testing.T) {
	for _, args := range [][]string{
		{"--kube-api-qps=0"},
		{"--kube-api-qps=-1"},
		{"--kube-api-qps=NaN"},
		{"--kube-api-burst=0"},
	} {
		cmd := newRelayCommand()
		cmd.SetArgs(append(args, "--config=/nonexistent/relay.yaml"))
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), "--kube-api-qps") || !strings.Contains(err.Error(), "--kube-api-burst") {
			t.Errorf("%v: got %v, want the rate refused", args, err)
		}
	}
}
