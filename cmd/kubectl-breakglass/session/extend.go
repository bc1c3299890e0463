package session

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/tower-dev/breakglass/relay/client"
	"github.com/tower-dev/breakglass/relay/wire"
)

func (o *options) extend() *cobra.Command {
	var q wire.ExtensionAsk
	var more time.Duration
	cmd := &cobra.Command{
		Use:               "extend SESSION --for DURATION --reason TEXT",
		ValidArgsFunction: o.completeSessions,
		Short:             "Ask for more time on your running session; another person approves",
		Long: `Ask for more time on your running session, before its hard stop. Another
person approves it (approve-extension); then a new grant replaces the
session's, the hard stop moves, and the terminal and its recording go on.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q.Duration = more.String()
			return o.run(cmd, args[0], func(ctx context.Context, c *client.Client, t client.Target) (wire.SessionView, error) {
				return c.Extend(ctx, t, q)
			})
		},
	}
	cmd.Flags().DurationVar(&more, "for", 15*time.Minute, "how much later the hard stop is to move")
	cmd.Flags().StringVar(&q.Reason, "reason", "", "why more time")
	return cmd
}

func (o *options) approveExtension() *cobra.Command {
	var comment string
	cmd := &cobra.Command{
		Use:               "approve-extension SESSION",
		ValidArgsFunction: o.completeSessions,
		Short:             "Approve the more time another person asked for on their session",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0], func(ctx context.Context, c *client.Client, t client.Target) (wire.SessionView, error) {
				return c.ApproveExtension(ctx, t, comment)
			})
		},
	}
	cmd.Flags().StringVar(&comment, "comment", "", "a note for the record")
	return cmd
}

func (o *options) denyExtension() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:               "deny-extension SESSION --reason TEXT",
		ValidArgsFunction: o.completeSessions,
		Short:             "Deny the more time another person asked for on their session",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0], func(ctx context.Context, c *client.Client, t client.Target) (wire.SessionView, error) {
				return c.DenyExtension(ctx, t, reason)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why not")
	return cmd
}
