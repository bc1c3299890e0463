// Command breakglass-dev runs the whole plane on this machine (make dev).
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tower-dev/breakglass/localplane"
	"github.com/tower-dev/breakglass/policies"
)

// breakglass-dev runs the whole plane on this machine for contributors and
// newcomers (make dev). It links the local test bed (envtest, the virtual
// and real nodes, a registry, Rekor), so it is a command of its own: the
// kubectl plugin people install stays small.
func main() {
	cmd := newCommand()
	cmd.SilenceUsage = true
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	var profile, addr, dir string
	var withRekor, realNode, both, backstage bool
	var reviewWithin time.Duration
	up := &cobra.Command{
		Use:   "breakglass-dev",
		Short: "Start the API server, the virtual node, the plane, the webhook, the sweeper, the relay with its console and a demo app; Ctrl-C stops all",
		Long: `Needs kube-apiserver and etcd in $KUBEBUILDER_ASSETS or bin/ (make dev builds them).
Everything runs on loopback and stops, leaving nothing behind, on Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := policies.Profile(profile)
			if p != policies.Flight && p != policies.Ground {
				return fmt.Errorf("--profile: %q is neither flight nor ground", profile)
			}
			if dir == "" {
				var err error
				if dir, err = os.MkdirTemp("", "breakglass-dev-"); err != nil {
					return err
				}
			} else if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			return localplane.Up(ctx, localplane.Options{Profile: p, RelayAddr: addr, Dir: dir, Rekor: withRekor, RealNode: realNode, Both: both, Backstage: backstage, ReviewWithin: reviewWithin, Ready: func(i localplane.Info) { printWelcome(out, i) }}, cmd.ErrOrStderr())
		},
	}
	up.Flags().StringVar(&profile, "profile", "flight", "flight (production rules) or ground: the first cluster's, and its name")
	up.Flags().StringVar(&addr, "relay-addr", "127.0.0.1:8443", "where the relay listens")
	up.Flags().BoolVar(&withRekor, "rekor", false, "also run Rekor (make rekor builds it; PostgreSQL from Debian) and anchor every recording")
	up.Flags().BoolVar(&realNode, "real-node", false, "run pods on a kubelet with containerd and runc (make node; Debian's containerd, runc, containernetworking-plugins and iptables; root) instead of the virtual node")
	up.Flags().BoolVar(&both, "both", false, "also run a cluster of the other profile (a Flight and a Ground cluster, one relay), on the virtual node")
	up.Flags().BoolVar(&backstage, "backstage", false, "also run Backstage with Tower's break-glass plugins in front of the relay (make backstage builds it; PostgreSQL from Debian), signing in at the demo issuer")
	up.Flags().DurationVar(&reviewWithin, "review-within", 24*time.Hour, "when a glass-broken session's review falls due; the fallback reviewer (carol) is told after it")
	up.Flags().StringVar(&dir, "dir", "", "where the kubeconfig, tokens and recordings go (a new temporary folder by default; removed at the end)")
	return up
}

func printWelcome(w io.Writer, i localplane.Info) {
	alice, bob := i.Tokens[localplane.Alice.Email], i.Tokens[localplane.Bob.Email]
	dir := filepath.Dir(i.Notifications)
	fmt.Fprintf(w, "\nThe break-glass plane is up (%.1fs).\n\n", i.Started.Seconds())
	fmt.Fprintf(w, "  console      %s   (sign in as one of the people below)\n", i.ConsoleURL)
	fmt.Fprintf(w, "  relay        %s\n", i.RelayURL)
	if i.BackstageURL != "" {
		fmt.Fprintf(w, "  backstage    %s   (Tower: the break-glass tab on the shop component; sign in as one of the people below)\n", i.BackstageURL)
		fmt.Fprintf(w, "               its log: %s\n", i.BackstageLog)
	}
	for _, c := range i.Clusters {
		fmt.Fprintf(w, "  cluster      %-8s %s plane; kubeconfig %s (cluster admin); demo pod %s/%s (recycled after a session: its replacement has a new name)\n",
			c.Name, c.Profile, c.Kubeconfig, i.Namespace, c.Pod)
	}
	fmt.Fprintf(w, "  debug image  %s   (signed; the webhook checks it)\n", i.DebugImage)
	fmt.Fprintf(w, "  recordings   %s/recordings   (write-once; kubectl breakglass recording verify DIR --integrity-only)%s\n", dir, rekorLine(i))
	fmt.Fprintf(w, "  notifications %s   (also printed below, with their deep links into %s)\n\n", i.Notifications, portal(i))
	fmt.Fprintln(w, "People (the demo issuer's sign-in page lists them; no password, it is a demo):")
	for _, p := range localplane.People {
		fmt.Fprintf(w, "  %-6s %-68s token in %s\n", p.Username, p.Role, i.Tokens[p.Person.Email])
	}
	fmt.Fprintf(w, `
Or with the CLI (bin/ on the PATH; with kubectl, "kubectl breakglass" works too). The kubeconfig's
context names the relay, the cluster and the namespace; each person keeps their login in a folder
of their own here (one person per machine needs no BREAKGLASS_CONFIG_DIR).

Terminal 1, as alice:
  export KUBECONFIG=%[1]s BREAKGLASS_CONFIG_DIR=%[2]s/alice
  kubectl-breakglass login --relay %[3]s      # a browser opens: pick alice
  kubectl-breakglass session request %[4]s --reason "checkout returns 500s" --attach

Terminal 2, as bob:
  export KUBECONFIG=%[1]s BREAKGLASS_CONFIG_DIR=%[2]s/bob
  kubectl-breakglass login --relay %[3]s --device      # enter the code on the page it names, as bob
  kubectl-breakglass session list -o wide
  kubectl-breakglass session approve SESSION

alice's terminal opens once bob approves; exit (or kubectl-breakglass session end SESSION) ends it.
Token files for scripts: %[5]s (alice), %[6]s (bob), with --token-file.

Ctrl-C stops everything.
`, i.Kubeconfig, dir, i.RelayURL, i.Pod, alice, bob)
}

// portal is where notifications link: Tower's pages in Backstage when it
// runs, else the console.
func portal(i localplane.Info) string {
	if i.BackstageURL != "" {
		return "Tower's pages in Backstage"
	}
	return "the console"
}

func rekorLine(i localplane.Info) string {
	if i.RekorURL == "" {
		return ""
	}
	return "\n  rekor        " + i.RekorURL + "   (every recording is anchored here)" +
		"\n  keys         " + i.RelayKey + " (the relay's), " + i.RekorKey + " (the log's): recording verify DIR --key " + i.RelayKey + " --rekor-public-key " + i.RekorKey +
		"\n  or cosign    cosign trusted-root create --rekor url=" + i.RekorURL + ",public-key=" + i.RekorKey + ",start-time=2020-01-01T00:00:00Z --out trusted-root.json" +
		"\n               cosign verify-blob --key " + i.RelayKey + " --bundle DIR/manifest.sigstore.json --trusted-root trusted-root.json DIR/manifest.json"
}
