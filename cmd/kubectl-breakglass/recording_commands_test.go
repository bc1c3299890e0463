package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/transcript"
)

// typedSession records a short session: a typo corrected, a completion,
// a command abandoned, a paste with a colour code in it.
func typedSession(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	clk := clocktesting.NewFakeClock(time.Now())
	ctx := context.Background()
	rec, err := recording.New(ctx, &recording.Dir{Root: root}, testRef, recording.Options{RetainUntil: time.Now().Add(time.Hour), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	start := clk.Now()
	for _, s := range []struct {
		at          time.Duration
		input, show string
	}{
		{0, "", "$ "},
		{time.Second, "ls -lx", "ls -lx"},
		{2 * time.Second, "\x7fa\r", "\b \ba\r\ntotal 0\r\n$ "},
		{70 * time.Second, "cat /etc/pas\t", "cat /etc/\x1b[1mpas\x1b[0mswd"},
		{71 * time.Second, "\r", "\r\nroot:x:0:0\r\n$ "},
		{83500 * time.Millisecond, "rm -rf /\x03", "rm -rf /^C\r\n$ "},
		{90 * time.Second, "\x1b[200~echo \x1b[31m\x1b[201~\r", "\r\n$ "},
	} {
		clk.SetTime(start.Add(s.at))
		if s.input != "" {
			if err := rec.Input(ctx, []byte(s.input)); err != nil {
				t.Fatal(err)
			}
		}
		if err := rec.Output(ctx, []byte(s.show)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, testRef.Prefix())
}

func TestRecordingCommands(t *testing.T) {
	dir := typedSession(t)
	for _, file := range []string{dir, filepath.Join(dir, recording.TranscriptFile)} {
		out, err := runCLI("recording", "commands", file)
		if err != nil {
			t.Fatalf("%s: %v\n%s", file, err, out)
		}
		for _, want := range []string{
			"AT", "1s  ", "ls -la\n",
			"?   cat /etc/pas  tab completion: the shell completed what was typed\n",
			"1m23.5s  ^C  rm -rf /", "Ctrl-C: abandoned",
			"echo ^[[31m", // a paste's escape shown, not sent to this terminal
			"4 commands, 1 uncertain (?)", "recording play " + filepath.Join(dir, recording.CastFile) + " --from 1s",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q in\n%s", file, want, out)
			}
		}
	}
	out, err := runCLI("recording", "commands", "--json", dir)
	var got struct{ Commands []transcript.Command }
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || len(got.Commands) != 4 {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if c := got.Commands[1]; c.Line != "cat /etc/pas" || c.At != 70*time.Second || !c.Uncertain || c.Ended != transcript.EndEnter {
		t.Errorf("--json: %+v", c)
	}
	if _, err := runCLI("recording", "commands", filepath.Join(dir, recording.CastFile)); err == nil || !strings.Contains(err.Error(), "is an asciicast") {
		t.Errorf("the cast given: %v", err)
	}
}

func TestRecordingSearch(t *testing.T) {
	dir := typedSession(t)
	out, err := runCLI("recording", "search", dir, "PASSWD")
	if err != nil || !strings.Contains(out, "1m10s  output  $ cat /etc/passwd") || strings.Count(out, "\n") != 2 {
		t.Fatalf("a word shown in two colours: %v\n%s", err, out)
	}
	out, err = runCLI("recording", "search", "--input", dir, "ls -la")
	if err != nil || !strings.Contains(out, "1s  input   ls -la") || strings.Contains(out, "output") {
		t.Fatalf("--input: %v\n%s", err, out)
	}
	out, err = runCLI("recording", "search", "--json", "--max", "1", dir, "$")
	var got struct{ Matches []transcript.Match }
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || len(got.Matches) != 1 || got.Matches[0].At != 0 {
		t.Fatalf("--json --max 1: %v\n%s", err, out)
	}
	if out, err := runCLI("recording", "search", dir, "nowhere"); err != nil || !strings.Contains(out, `no match for "nowhere"`) {
		t.Fatalf("no match: %v\n%s", err, out)
	}
}

func TestRecordingPlayFrom(t *testing.T) {
	cast := filepath.Join(typedSession(t), recording.CastFile)
	start := time.Now()
	// Everything up to 1m30s at once; nothing comes after it.
	out, err := runCLI("recording", "play", "--from", "1m30s", cast)
	if err != nil || !strings.HasPrefix(out, "$ ls -lx\b \ba") || !strings.HasSuffix(out, "rm -rf /^C\r\n$ \r\n$ ") {
		t.Fatalf("play --from: %v\n%q", err, out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("--from 1m30s took %s: it waited for what came before", d)
	}
	if _, err := runCLI("recording", "play", "--from", "-1s", cast); err == nil || !strings.Contains(err.Error(), "not before it") {
		t.Fatalf("--from -1s: %v", err)
	}
}
