// Package session is `kubectl breakglass session`: request, approve, deny,
// start, attach to, end, review and list debug sessions through the relay.
package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	kterm "k8s.io/kubectl/pkg/util/term"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/cmd/kubectl-breakglass/login"
	"github.com/tower-dev/breakglass/relay/client"
	"github.com/tower-dev/breakglass/relay/wire"
)

// options are the flags every session command shares.
type options struct {
	relayURL, tokenFile, cluster, configDir string
	kube                                    kubeFlags
	// namespace and resolved: see resolve.
	namespace string
	resolved  bool
}

// New returns the session command.
func New() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Request, approve, start, attach to and end debug sessions through the relay",
		Long: `Drive a debug session through the relay's API as yourself.

Your identity is the OIDC ID token kubectl breakglass login keeps (or one
read from --token-file or $BREAKGLASS_TOKEN; a token never goes on the
command line, where other users can read it). The relay is --relay,
$BREAKGLASS_RELAY, the kubeconfig context's, or the login's. The cluster is
--cluster, $BREAKGLASS_CLUSTER, or the kubeconfig context's (its cluster's
name, or the name its ` + ContextExtension + ` extension gives); the
namespace is -n or the context's.

Exit codes: 0 done; 1 failed; 2 a wrong command line; 3 the relay refused
(not allowed, not now); 4 no such session; 5 denied, or ended without
starting (request --wait); 6 the wait timed out.`,
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.relayURL, "relay", os.Getenv("BREAKGLASS_RELAY"), "the relay's URL ($BREAKGLASS_RELAY)")
	f.StringVar(&o.tokenFile, "token-file", "", "a file holding your OIDC ID token (else $BREAKGLASS_TOKEN, else the login's)")
	f.StringVar(&o.cluster, "cluster", os.Getenv("BREAKGLASS_CLUSTER"), "the target cluster's name in the relay ($BREAKGLASS_CLUSTER; default: the kubeconfig context's)")
	f.StringVar(&o.configDir, login.ConfigDirFlag, "", "where kubectl breakglass login keeps the login (default: $BREAKGLASS_CONFIG_DIR, else breakglass in your config directory)")
	o.kube.addFlags(f)
	cmd.AddCommand(o.request(), o.approve(), o.deny(), o.start(), o.attach(), o.end(), o.review(), o.list(), o.get(),
		o.extend(), o.approveExtension(), o.denyExtension())
	return cmd
}

// run is the shape of every one-call command: build the client and the
// target, call, print the session.
func (o *options) run(cmd *cobra.Command, name string, call func(context.Context, *client.Client, client.Target) (wire.SessionView, error)) error {
	c, t, err := o.clientFor(cmd.Context(), name)
	if err != nil {
		return err
	}
	v, err := call(cmd.Context(), c, t)
	if err != nil {
		return err
	}
	printSession(cmd.OutOrStdout(), v)
	return nil
}

func printSession(w io.Writer, v wire.SessionView) {
	st := v.Status
	fmt.Fprintf(w, "session %s in %s/%s: %s\n", v.Name, v.Cluster, v.Namespace, st.Phase)
	fmt.Fprintf(w, "  pod %s, mode %s, %s, requested by %s: %s\n", v.Spec.TargetPod, v.Spec.Mode, v.Spec.Duration.Duration, v.Spec.Requester, v.Spec.Reason)
	if v.Spec.ProcessAccess {
		fmt.Fprintf(w, "  process access to container %s asked\n", v.Spec.TargetContainer)
	}
	if a := st.Approval; a != nil {
		fmt.Fprintf(w, "  approved by %s: process access %t, keep the pod %t\n", a.By, a.ProcessAccess, a.KeepPod)
	}
	if d := st.Denial; d != nil {
		fmt.Fprintf(w, "  denied by %s: %s\n", d.By, d.Reason)
	}
	if st.Deadline != nil && st.Phase == v1alpha1.PhaseActive {
		fmt.Fprintf(w, "  hard stop at %s\n", st.Deadline.Format(time.RFC3339))
	}
	for _, x := range st.Extensions {
		fmt.Fprintf(w, "  %s more asked by %s (%s): %s by %s\n", x.Duration.Duration, x.By, x.Reason, x.Decision, x.DecidedBy)
	}
	if x := st.ExtensionRequest; x != nil && st.Phase == v1alpha1.PhaseActive {
		fmt.Fprintf(w, "  %s more asked by %s, waiting for another person: %s\n", x.Duration.Duration, x.By, x.Reason)
	}
	if e := st.End; e != nil {
		fmt.Fprintf(w, "  ended by %s (%s) at %s\n", e.By, e.Reason, e.At.Format(time.RFC3339))
	}
	if ev := st.Evidence; ev != nil && ev.ManifestSHA256 != "" {
		fmt.Fprintf(w, "  recording manifest sha256 %s\n", ev.ManifestSHA256)
	}
	if r := st.Review; r != nil && r.By != "" {
		fmt.Fprintf(w, "  reviewed by %s: %s\n", r.By, r.Comment)
	} else if r != nil && r.DueAt != nil {
		fmt.Fprintf(w, "  review due by %s\n", r.DueAt.Format(time.RFC3339))
	}
}

func (o *options) request() *cobra.Command {
	var q wire.Request
	var mode string
	var wait, attach bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "request POD --reason TEXT",
		Short: "Ask for a debug session on a pod; another person approves it",
		Long: `Ask for a debug session on a pod. With --wait, wait for another person's
decision; with --attach, also start the session once approved and open its
terminal (exit code 5 when denied, 6 when nobody decided in --timeout).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q.Pod, q.Mode = args[0], v1alpha1.SessionMode(mode)
			c, t, err := o.clientFor(cmd.Context(), "")
			if err != nil {
				return err
			}
			v, err := c.Request(cmd.Context(), t, q)
			if err != nil {
				return err
			}
			printSession(cmd.OutOrStdout(), v)
			if !wait && !attach {
				return nil
			}
			t.Name = v.Name
			if v, err = waitDecided(cmd.Context(), c, t, cmd.ErrOrStderr(), time.Second, timeout); err != nil {
				return err
			}
			printSession(cmd.OutOrStdout(), v)
			if !attach {
				return nil
			}
			if v.Status.Phase == v1alpha1.PhaseApproved {
				if _, err := startSession(cmd.Context(), c, t, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			return o.attachTo(cmd, c, t)
		},
	}
	f := cmd.Flags()
	f.StringVar(&mode, "mode", "live", "live (a debug container in the pod), copy, or heldCopy")
	f.StringVar(&q.Duration, "duration", "30m", "how long, 15m to 75m")
	f.StringVar(&q.Reason, "reason", "", "why: the approver and the reviewers read it")
	f.StringVarP(&q.Container, "container", "c", "", "the app container, for process access")
	f.BoolVar(&q.ProcessAccess, "process-access", false, "see the app container's processes (the recording becomes sensitive)")
	f.BoolVar(&q.KeepPod, "keep-pod", false, "ask to keep the pod afterwards instead of recycling it")
	f.BoolVar(&q.GlassBroken, "break-glass", false, "start without approval (needs the breakGlass permission); reviewed afterwards")
	f.BoolVar(&wait, "wait", false, "wait for the decision")
	f.BoolVar(&attach, "attach", false, "wait for the decision, then start the session and open its terminal")
	f.DurationVar(&timeout, "timeout", 30*time.Minute, "how long --wait and --attach wait for a decision")
	return cmd
}

func (o *options) approve() *cobra.Command {
	var d wire.Decision
	cmd := &cobra.Command{
		Use:               "approve SESSION",
		ValidArgsFunction: o.completeSessions,
		Short:             "Approve another person's session",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0], func(ctx context.Context, c *client.Client, t client.Target) (wire.SessionView, error) {
				return c.Approve(ctx, t, d)
			})
		},
	}
	cmd.Flags().BoolVar(&d.KeepPod, "keep-pod", false, "keep the pod afterwards instead of recycling it")
	cmd.Flags().BoolVar(&d.WithoutProcessAccess, "without-process-access", false, "approve without the process access asked for")
	cmd.Flags().StringVar(&d.Comment, "comment", "", "a note for the record")
	return cmd
}

func (o *options) deny() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:               "deny SESSION --reason TEXT",
		ValidArgsFunction: o.completeSessions,
		Short:             "Deny another person's session",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0], func(ctx context.Context, c *client.Client, t client.Target) (wire.SessionView, error) {
				return c.Deny(ctx, t, reason)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why not")
	return cmd
}

func (o *options) start() *cobra.Command {
	return &cobra.Command{
		Use:               "start SESSION",
		ValidArgsFunction: o.completeSessions,
		Short:             "Start your approved session: the grant, the debug container, the recorded terminal",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0], func(ctx context.Context, c *client.Client, t client.Target) (wire.SessionView, error) {
				return startSession(ctx, c, t, cmd.ErrOrStderr())
			})
		},
	}
}

func (o *options) end() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:               "end SESSION",
		ValidArgsFunction: o.completeSessions,
		Short:             "End a session: detach, recycle the pod, revoke the grant",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0], func(ctx context.Context, c *client.Client, t client.Target) (wire.SessionView, error) {
				return c.End(ctx, t, reason)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why it ends now")
	return cmd
}

func (o *options) review() *cobra.Command {
	var comment string
	cmd := &cobra.Command{
		Use:               "review SESSION --comment TEXT",
		ValidArgsFunction: o.completeSessions,
		Short:             "Review another person's ended session",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0], func(ctx context.Context, c *client.Client, t client.Target) (wire.SessionView, error) {
				return c.Review(ctx, t, comment)
			})
		},
	}
	cmd.Flags().StringVar(&comment, "comment", "", "what you found")
	return cmd
}

func (o *options) attach() *cobra.Command {
	return &cobra.Command{
		Use:               "attach SESSION",
		Short:             "Open the session's terminal (yours to type in; an approver watches read-only)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, t, err := o.clientFor(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return o.attachTo(cmd, c, t)
		},
	}
}

// attachTo opens t's terminal on the command's input and output.
func (o *options) attachTo(cmd *cobra.Command, c *client.Client, t client.Target) error {
	in, out := cmd.InOrStdin(), cmd.OutOrStdout()
	// kubectl's own terminal handling: raw mode restored on the way out,
	// and size changes followed on Linux, macOS (SIGWINCH) and Windows
	// (polled).
	tty := kterm.TTY{In: in, Out: out, Raw: true}
	resize := make(chan client.Size, 1)
	resize <- sizeOf(tty.GetSize())
	if sizes := tty.MonitorSize(); sizes != nil {
		go func() {
			for s := sizes.Next(); s != nil; s = sizes.Next() {
				select {
				case <-resize: // only the newest size matters
				default:
				}
				resize <- sizeOf(&kterm.TerminalSize{Width: s.Width, Height: s.Height})
			}
		}()
	}
	keys := newInput(in)
	sz := &sizes{in: resize, latest: <-resize}
	return tty.Safe(func() error {
		var lostAt time.Time
		for {
			stop := make(chan struct{})
			err := c.Attach(cmd.Context(), t, keys.reader(stop), out, cmd.ErrOrStderr(), sz.next(stop))
			close(stop)
			var ended *client.Ended
			if errors.As(err, &ended) {
				fmt.Fprintf(cmd.ErrOrStderr(), "\r\n%s\r\n", ended.Reason)
				if ended.Code == 1000 {
					return nil
				}
			}
			if !reconnectable(cmd.Context(), c, t, err) {
				return err
			}
			// The relay went away (restarted, its node drained): another
			// takes the session up within about a minute, in a new shell.
			if lostAt.IsZero() {
				lostAt = time.Now()
			} else if time.Since(lostAt) > reconnectFor {
				return fmt.Errorf("the terminal could not reconnect within %s: %w", reconnectFor, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "\r\nthe terminal's connection dropped (%v); reconnecting: the session goes on\r\n", err)
			select {
			case <-cmd.Context().Done():
				return err
			case <-time.After(2 * time.Second):
			}
		}
	})
}

// reconnectFor is how long attach keeps reconnecting to a session that is
// still Active: longer than a relay takes to take up a session its old
// relay left.
var reconnectFor = 2 * time.Minute

// reconnectable says whether a terminal that closed with err is worth
// opening again: the session is still Active and the relay did not refuse
// the caller.
func reconnectable(ctx context.Context, c *client.Client, t client.Target, err error) bool {
	var rel *client.Error
	if errors.As(err, &rel) && rel.Status != http.StatusConflict && rel.Status != http.StatusServiceUnavailable && rel.Status != http.StatusBadGateway {
		return false // refused: not allowed, no such session
	}
	var ended *client.Ended
	if errors.As(err, &ended) && ended.Code == 1000 {
		return false
	}
	v, gerr := c.Get(ctx, t)
	return gerr != nil || v.Status.Phase == v1alpha1.PhaseActive
}

// defaultSize is a terminal's size when the input is not one (a script, a
// pipe) or says it is 0x0 (some CI runners' pseudo-terminals).
var defaultSize = client.Size{Cols: 80, Rows: 24}

func sizeOf(s *kterm.TerminalSize) client.Size {
	if s == nil || s.Width == 0 || s.Height == 0 {
		return defaultSize
	}
	return client.Size{Cols: s.Width, Rows: s.Height}
}
