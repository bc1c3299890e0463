package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/transcript"
)

func newRecordingCommandsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "commands FILE",
		Short: "List the commands typed in a recording (its transcript, or its folder)",
		Long: `List the lines typed in a session, rebuilt from the keys in its transcript
(transcript.raw: the cast may not hold the input), each at the time its first
key came: "recording play DIR/recording.cast --from AT" replays from there.

The keys are replayed as the shell's line editor takes them (Backspace,
Ctrl-U, Ctrl-W, the cursor keys, bracketed paste). What the input cannot
show is marked "?" with why: a line recalled from history, a completion,
another escape sequence, keys sent to a full-screen program. ^C marks a line
abandoned, ^D the end of input, … a line never entered. --json gives each
line's input byte range too. This checks nothing: run "recording verify" first.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			records, err := readTranscriptArg(args[0])
			if err != nil {
				return err
			}
			cmds := recording.Commands(records)
			if cmds == nil {
				cmds = []transcript.Command{}
			}
			if asJSON {
				return writeIndented(cmd.OutOrStdout(), map[string]any{"commands": cmds})
			}
			return printCommands(cmd.OutOrStdout(), args[0], cmds)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"commands": [...]} (times in seconds)`)
	return cmd
}

func newRecordingSearchCommand() *cobra.Command {
	var opts recording.SearchOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "search FILE QUERY",
		Short: "Find text in what a session showed and typed (its transcript, or its folder)",
		Long: `Find QUERY, ignoring case, in what the terminal showed (the output with its
colours and cursor moves applied, so a coloured word is found whole; text
shown and then erased is found too) and in the commands typed (as "recording
commands" rebuilds them). One match per line, in time order; --output or
--input alone searches that stream only.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(args[1]) == "" {
				return errors.New("QUERY: say what to find")
			}
			records, err := readTranscriptArg(args[0])
			if err != nil {
				return err
			}
			matches := recording.Search(records, args[1], opts)
			if matches == nil {
				matches = []transcript.Match{}
			}
			if asJSON {
				return writeIndented(cmd.OutOrStdout(), map[string]any{"matches": matches})
			}
			w := cmd.OutOrStdout()
			if len(matches) == 0 {
				_, err := fmt.Fprintf(w, "no match for %q\n", args[1])
				return err
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AT\tSTREAM\tCONTEXT")
			for _, m := range matches {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", offset(m.At), m.Stream, m.Context)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&opts.Output, "output", false, "search what the terminal showed")
	cmd.Flags().BoolVar(&opts.Input, "input", false, "search the commands typed")
	cmd.Flags().IntVar(&opts.Max, "max", recording.DefaultSearchMax, "at most this many matches")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"matches": [...]} (times in seconds)`)
	return cmd
}

// readTranscriptArg reads the transcript path names: the file, or the one
// in a recording's folder, under the name its manifest gives it.
func readTranscriptArg(path string) ([]recording.Record, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		name := recording.TranscriptFile
		if body, err := os.ReadFile(filepath.Join(path, recording.ManifestFile)); err == nil {
			if m, err := recording.ParseManifest(body); err == nil && m.Files[recording.TranscriptFile].Stored != "" {
				name = filepath.Base(m.Files[recording.TranscriptFile].Stored)
			}
		}
		path = filepath.Join(path, name)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(raw, []byte("{")) {
		return nil, fmt.Errorf("%s is an asciicast, which need not hold what was typed: give the transcript (%s beside it) or the recording's folder", path, recording.TranscriptFile)
	}
	records, err := recording.ReadTranscript(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: not a transcript: %w", path, err)
	}
	return records, nil
}

func printCommands(w io.Writer, file string, cmds []transcript.Command) error {
	if len(cmds) == 0 {
		_, err := fmt.Fprintln(w, "no commands were typed")
		return err
	}
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\t\tCOMMAND\tNOTE")
	uncertain := 0
	for _, c := range cmds {
		mark := ""
		if c.Uncertain {
			mark, uncertain = "?", uncertain+1
		}
		switch c.Ended {
		case transcript.EndInterrupt:
			mark += "^C"
		case transcript.EndEOF:
			mark += "^D"
		case transcript.EndUnfinished:
			mark += "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", offset(c.At), mark, visible(c.Line), c.Why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// A line without a note ends in the padding of its command.
	for l := range strings.Lines(table.String()) {
		fmt.Fprintln(w, strings.TrimRight(l, " \n"))
	}
	cast := filepath.Join(filepath.Dir(file), recording.CastFile)
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		cast = filepath.Join(file, recording.CastFile)
	}
	_, err := fmt.Fprintf(w, "\n%d commands, %d uncertain (?). Replay from one: kubectl breakglass recording play %s --from %s\n",
		len(cmds), uncertain, cast, offset(cmds[0].At))
	return err
}

// offset prints a time in the recording as --from reads it.
func offset(d time.Duration) string { return d.Truncate(time.Millisecond).String() }

// visible shows a line's control characters (a paste may hold any) as ^X,
// so that a recording cannot drive the reviewer's terminal.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x20:
			b.WriteString("^" + string(r+'@'))
		case r == 0x7f:
			b.WriteString("^?")
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
