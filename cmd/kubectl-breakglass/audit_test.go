package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tower-dev/breakglass/evidence/audit"
)

func TestAuditVerify(t *testing.T) {
	var buf bytes.Buffer
	l := audit.NewLog(audit.Event{}, nil, &audit.Writer{W: &buf})
	for _, kind := range []string{"request", "approve", "grant", "attach", "end"} {
		if _, err := l.Record(context.Background(), audit.Event{Kind: kind, Actor: "alice", Session: "shop/s1"}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(good, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI("audit", "verify", good)
	if err != nil || !strings.Contains(out, "5 events, chain intact") {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.SplitAfter(buf.String(), "\n")
	cut := filepath.Join(dir, "cut.log")
	if err := os.WriteFile(cut, []byte(lines[0]+lines[1]+lines[3]+lines[4]), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI("audit", "verify", cut); err == nil || !strings.Contains(err.Error(), "after 2 good events: line 3: seq 4 follows seq 2") {
		t.Fatalf("a removed line: %v", err)
	}
}
