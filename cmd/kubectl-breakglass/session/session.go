// Package session is `kubectl breakglass session`: request, approve, deny,
// start, attach to, end, review and list debug sessions through the relay.
package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	kterm "k8s.io/kubectl/pkg/util/term"

	"github.com/tower-dev/breakglass/api/v1alpha1"
	"github.com/tower-dev/breakglass/relay"
	"github.com/tower-dev/breakglass/relay/client"
)

// options are the flags every session command shares.
type options struct {
	relayURL, tokenFile, cluster, namespace string
}

// New returns the session command.
func New() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Request, approve, start, attach to and end debug sessions through the relay",
		Long: `Drive a debug session through the relay's API as yourself.

Your identity is your OIDC ID token (the portal's), read from --token-file or
$BREAKGLASS_TOKEN; the relay's address from --relay or $BREAKGLASS_RELAY. A
token never goes on the command line, where other users can read it.`,
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.relayURL, "relay", os.Getenv("BREAKGLASS_RELAY"), "the relay's URL ($BREAKGLASS_RELAY)")
	f.StringVar(&o.tokenFile, "token-file", "", "a file holding your OIDC ID token (else $BREAKGLASS_TOKEN)")
	f.StringVar(&o.cluster, "cluster", envOr("BREAKGLASS_CLUSTER", ""), "the target cluster's name in the relay ($BREAKGLASS_CLUSTER)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "the app's namespace")
	cmd.AddCommand(o.request(), o.approve(), o.deny(), o.start(), o.attach(), o.end(), o.review(), o.list())
	return cmd
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func (o *options) client() (*client.Client, error) {
	if o.relayURL == "" {
		return nil, errors.New("no relay: pass --relay or set BREAKGLASS_RELAY")
	}
	tok := os.Getenv("BREAKGLASS_TOKEN")
	if o.tokenFile != "" {
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return nil, err
		}
		tok = strings.TrimSpace(string(b))
	}
	if tok == "" {
		return nil, errors.New("no token: pass --token-file or set BREAKGLASS_TOKEN")
	}
	return &client.Client{BaseURL: o.relayURL, Token: tok}, nil
}

func (o *options) target(name string) (client.Target, error) {
	if o.cluster == "" || o.namespace == "" {
		return client.Target{}, errors.New("--cluster and --namespace name the session's cluster and namespace")
	}
	return client.Target{Cluster: o.cluster, Namespace: o.namespace, Name: name}, nil
}

// run is the shape of every one-call command: build the client and the
// target, call, print the session.
func (o *options) run(cmd *cobra.Command, name string, call func(context.Context, *client.Client, client.Target) (relay.SessionView, error)) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	t, err := o.target(name)
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

func printSession(w io.Writer, v relay.SessionView) {
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
	var q relay.Request
	var mode string
	cmd := &cobra.Command{
		Use:   "request POD --reason TEXT",
		Short: "Ask for a debug session on a pod; another person approves it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q.Pod, q.Mode = args[0], v1alpha1.SessionMode(mode)
			return o.run(cmd, "", func(ctx context.Context, c *client.Client, t client.Target) (relay.SessionView, error) {
				return c.Request(ctx, t, q)
			})
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
	return cmd
}

func (o *options) approve() *cobra.Command {
	var d relay.Decision
	cmd := &cobra.Command{
		Use:   "approve SESSION",
		Short: "Approve another person's session",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0], func(ctx context.Context, c *client.Client, t client.Target) (relay.SessionView, error) {
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
		Use:   "deny SESSION --reason TEXT",
		Short: "Deny another person's session",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0], func(ctx context.Context, c *client.Client, t client.Target) (relay.SessionView, error) {
				return c.Deny(ctx, t, reason)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why not")
	return cmd
}

func (o *options) start() *cobra.Command {
	return &cobra.Command{
		Use:   "start SESSION",
		Short: "Start your approved session: the grant, the debug container, the recorded terminal",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0], func(ctx context.Context, c *client.Client, t client.Target) (relay.SessionView, error) {
				return c.Start(ctx, t)
			})
		},
	}
}

func (o *options) end() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "end SESSION",
		Short: "End a session: detach, recycle the pod, revoke the grant",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0], func(ctx context.Context, c *client.Client, t client.Target) (relay.SessionView, error) {
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
		Use:   "review SESSION --comment TEXT",
		Short: "Review another person's ended session",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0], func(ctx context.Context, c *client.Client, t client.Target) (relay.SessionView, error) {
				return c.Review(ctx, t, comment)
			})
		},
	}
	cmd.Flags().StringVar(&comment, "comment", "", "what you found")
	return cmd
}

func (o *options) list() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the sessions you may see",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			sessions, err := c.List(cmd.Context(), o.cluster, o.namespace)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "CLUSTER\tNAMESPACE\tNAME\tPOD\tMODE\tPHASE\tREQUESTER\tAGE\tREASON")
			for _, v := range sessions {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Cluster, v.Namespace, v.Name, v.Spec.TargetPod, v.Spec.Mode,
					v.Status.Phase, v.Spec.Requester, time.Since(v.Created.Time).Round(time.Second), v.Spec.Reason)
			}
			return w.Flush()
		},
	}
}

func (o *options) attach() *cobra.Command {
	return &cobra.Command{
		Use:   "attach SESSION",
		Short: "Open the session's terminal (yours to type in; an approver watches read-only)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			t, err := o.target(args[0])
			if err != nil {
				return err
			}
			in, out := cmd.InOrStdin(), cmd.OutOrStdout()
			// kubectl's own terminal handling: raw mode restored on the way
			// out, and size changes followed on Linux, macOS (SIGWINCH) and
			// Windows (polled).
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
			err = tty.Safe(func() error { return c.Attach(cmd.Context(), t, in, out, cmd.ErrOrStderr(), resize) })
			var ended *client.Ended
			if errors.As(err, &ended) {
				fmt.Fprintf(cmd.ErrOrStderr(), "\r\n%s\r\n", ended.Reason)
				if ended.Code == 1000 {
					return nil
				}
			}
			return err
		},
	}
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
