package audit

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// FuzzVerify: any file handed to `audit verify` is refused at the line it
// breaks, or is a whole chain: then its last event is the one Last reads
// to continue from. (A chain holds no secret: what makes a log evidence is
// its head anchored in a checkpoint, checked by VerifyAgainst.)
func FuzzVerify(f *testing.F) {
	var chain bytes.Buffer
	log := NewLog(Event{}, func() time.Time { return time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC) }, &Writer{W: &chain})
	for _, e := range []Event{{Kind: "request", Actor: "alice"}, {Kind: "approve", Actor: "bob", Reason: "ok"}, {Kind: "end", Actor: "alice"}} {
		if _, err := log.Record(context.Background(), e); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(chain.Bytes())
	f.Add([]byte(strings.Replace(chain.String(), "bob", "eve", 1)))
	f.Add([]byte("{}\n"))
	f.Add([]byte("not json\n"))
	f.Add([]byte("{\"seq\":1,\"extra\":true}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Verify(bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") && !strings.Contains(err.Error(), "token too long") {
				t.Fatalf("a refusal that does not say where: %v", err)
			}
			return
		}
		if n == 0 {
			return
		}
		last, err := Last(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("a verified log whose last event does not read: %v", err)
		}
		lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
		var kept [][]byte
		for _, l := range lines {
			if len(bytes.TrimSpace(l)) > 0 {
				kept = append(kept, l)
			}
		}
		if last.Hash == "" || len(kept) != n {
			t.Fatalf("%d events verified, %d lines, last %+v", n, len(kept), last)
		}
		if n > 1 {
			// A log may start anywhere: its tail verifies too.
			if _, err := Verify(bytes.NewReader(bytes.Join(kept[1:], []byte("\n")))); err != nil {
				t.Fatalf("a verified chain's tail does not verify: %v", err)
			}
		}
	})
}
