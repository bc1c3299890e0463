package session

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/relay/wire"
)

// printer prints sessions as kubectl prints objects: a table (wide adds
// columns), json, yaml, or name.
type printer struct {
	format string
	w      io.Writer
	tw     *tabwriter.Writer
	// header is set once the table's header is printed; list, when json
	// and yaml print a List even of one session.
	header, list bool
	now          func() time.Time
}

func newPrinter(format string, w io.Writer) (*printer, error) {
	switch format {
	case "", "wide", "json", "yaml", "name":
	default:
		return nil, &usageError{fmt.Errorf("-o %q: one of json, yaml, wide, name", format)}
	}
	return &printer{format: format, w: w, tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0), now: time.Now}, nil
}

func (p *printer) print(views ...wire.SessionView) error {
	switch p.format {
	case "json", "yaml":
		var v any = map[string]any{"kind": "List", "items": views}
		if len(views) == 1 && !p.list {
			v = views[0]
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		if p.format == "yaml" {
			if b, err = yaml.JSONToYAML(b); err != nil {
				return err
			}
			b = append([]byte("---\n"), b...)
		} else {
			b = append(b, '\n')
		}
		_, err = p.w.Write(b)
		return err
	case "name":
		for _, v := range views {
			fmt.Fprintf(p.w, "session/%s\n", v.Name)
		}
		return nil
	}
	if !p.header {
		p.header = true
		fmt.Fprint(p.tw, "CLUSTER\tNAMESPACE\tNAME\tPOD\tMODE\tPHASE\tREQUESTER\tAGE")
		if p.format == "wide" {
			fmt.Fprint(p.tw, "\tAPPROVER\tPROCESS\tKEEP-POD\tENDS\tREASON")
		}
		fmt.Fprintln(p.tw)
	}
	for _, v := range views {
		fmt.Fprintf(p.tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", v.Cluster, v.Namespace, v.Name, v.Spec.TargetPod, v.Spec.Mode,
			v.Status.Phase, v.Spec.Requester, age(p.now(), v.Created.Time))
		if p.format == "wide" {
			approver, process, keep := "<none>", v.Spec.ProcessAccess, false
			if a := v.Status.Approval; a != nil {
				approver, process, keep = a.By, a.ProcessAccess, a.KeepPod
			}
			ends := "<none>"
			switch {
			case v.Status.End != nil:
				ends = "ended " + age(p.now(), v.Status.End.At.Time) + " ago (" + string(v.Status.End.Reason) + ")"
			case v.Status.Deadline != nil:
				ends = "in " + age(v.Status.Deadline.Time, p.now())
			}
			fmt.Fprintf(p.tw, "\t%s\t%t\t%t\t%s\t%s", approver, process, keep, ends, v.Spec.Reason)
		}
		fmt.Fprintln(p.tw)
	}
	return p.tw.Flush()
}

// age is a duration as kubectl prints ages: 45s, 12m, 3h20m, 5d.
func age(now, then time.Time) string {
	if then.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(then))
}

func (o *options) list() *cobra.Command {
	var output string
	var all, watch bool
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the sessions you may see in the namespace (-A: everywhere)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := newPrinter(output, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			c, err := o.client(cmd.Context())
			if err != nil {
				return err
			}
			cluster, namespace := o.cluster, o.namespace
			if all {
				cluster, namespace = "", ""
			}
			p.list = true
			return poll(cmd.Context(), watch, every, func(ctx context.Context) ([]wire.SessionView, error) {
				return c.List(ctx, cluster, namespace)
			}, p.print)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json, yaml, wide or name")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "every cluster and namespace you may see")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after the list, print each session again when it changes")
	cmd.Flags().DurationVar(&every, "watch-interval", 2*time.Second, "how often --watch asks the relay")
	return cmd
}

func (o *options) get() *cobra.Command {
	var output string
	var watch bool
	var every time.Duration
	cmd := &cobra.Command{
		Use:               "get SESSION",
		Short:             "Show one session",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, t, err := o.clientFor(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if output == "" && !watch {
				v, err := c.Get(cmd.Context(), t)
				if err != nil {
					return err
				}
				printSession(cmd.OutOrStdout(), v)
				return nil
			}
			p, err := newPrinter(output, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			return poll(cmd.Context(), watch, every, func(ctx context.Context) ([]wire.SessionView, error) {
				v, err := c.Get(ctx, t)
				return []wire.SessionView{v}, err
			}, p.print)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json, yaml, wide or name (default: a description)")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "print the session again whenever it changes")
	cmd.Flags().DurationVar(&every, "watch-interval", 2*time.Second, "how often --watch asks the relay")
	return cmd
}

// poll prints what fetch returns, then, when watching, each session again
// whenever it changes (the relay's API has no watch: it is asked every
// interval), until the context ends.
func poll(ctx context.Context, watch bool, every time.Duration, fetch func(context.Context) ([]wire.SessionView, error), print func(...wire.SessionView) error) error {
	seen := map[string]string{}
	changed := func(views []wire.SessionView) []wire.SessionView {
		var out []wire.SessionView
		for _, v := range views {
			v.Live = nil // counters that move every second are not changes
			b, _ := json.Marshal(v)
			key := v.Cluster + "/" + v.Namespace + "/" + v.Name
			if seen[key] != string(b) {
				seen[key] = string(b)
				out = append(out, v)
			}
		}
		return out
	}
	views, err := fetch(ctx)
	if err != nil {
		return err
	}
	if err := print(changed(views)...); err != nil || !watch {
		return err
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		views, err := fetch(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if c := changed(views); len(c) > 0 {
			if err := print(c...); err != nil {
				return err
			}
		}
	}
}

// completeSessions offers the names of the sessions in the namespace, for
// shell completion.
func (o *options) completeSessions(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := o.client(cmd.Context())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	views, err := c.List(cmd.Context(), o.cluster, o.namespace)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	names := make([]string, 0, len(views))
	for _, v := range views {
		names = append(names, v.Name+"\t"+string(v.Status.Phase)+": "+v.Spec.TargetPod)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
