package session

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tower-dev/breakglass/cmd/kubectl-breakglass/login"
	"github.com/tower-dev/breakglass/relay/client"
)

// ContextExtension is the kubeconfig context extension that maps a
// context to the relay's name for its cluster: client.ContextExtension.
const ContextExtension = client.ContextExtension

// kubeFlags are kubectl's --kubeconfig, --context and -n/--namespace,
// loaded by client-go's clientcmd with kubectl's rules ($KUBECONFIG, then
// ~/.kube/config), as cli-runtime does, without linking the rest of
// kubectl: the plugin never talks to the API server, the relay does.
type kubeFlags struct {
	kubeconfig, context, namespace string
}

func (k *kubeFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&k.kubeconfig, "kubeconfig", "", "the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&k.context, "context", "", "the kubeconfig context (default: the current one)")
	f.StringVarP(&k.namespace, "namespace", "n", "", "the namespace (default: the context's)")
}

func (k *kubeFlags) loader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
}

// where is what the kubeconfig's context says: the relay's name for the
// cluster, its namespace, and a relay if the context names one.
type where struct {
	cluster, namespace, relay string
}

func (o *options) fromKubeconfig() (where, error) {
	// Only the context is read, not whether it could reach its API server.
	w := where{namespace: o.kube.namespace}
	raw, err := o.kube.loader().RawConfig()
	if err != nil {
		return w, fmt.Errorf("the kubeconfig: %w", err)
	}
	name := raw.CurrentContext
	if o.kube.context != "" {
		name = o.kube.context
	}
	ctx, ok := raw.Contexts[name]
	if !ok {
		if o.kube.context != "" {
			return w, fmt.Errorf("the kubeconfig has no context %q", name)
		}
		return w, nil // no kubeconfig or no current context: flags and the environment say it all
	}
	w.cluster = ctx.Cluster
	if w.namespace == "" {
		w.namespace = cmp.Or(ctx.Namespace, "default") // kubectl's rule
	}
	if ext, ok := ctx.Extensions[ContextExtension]; ok {
		var m struct{ Cluster, Relay string }
		if err := json.Unmarshal(rawExtension(ext), &m); err != nil {
			return w, fmt.Errorf("the context %s's %s extension: %w", name, ContextExtension, err)
		}
		if m.Cluster != "" {
			w.cluster = m.Cluster
		}
		w.relay = m.Relay
	}
	return w, nil
}

func rawExtension(o runtime.Object) []byte {
	if u, ok := o.(*runtime.Unknown); ok {
		return u.Raw
	}
	b, _ := json.Marshal(o)
	return b
}

// resolve fills in the relay, the cluster and the namespace: flags first,
// then the environment, then the kubeconfig's context, then the login.
func (o *options) resolve() error {
	if o.resolved {
		return nil
	}
	k, err := o.fromKubeconfig()
	if err != nil {
		return err
	}
	if o.cluster == "" {
		o.cluster = k.cluster
	}
	o.namespace = k.namespace
	if o.relayURL == "" {
		o.relayURL = k.relay
	}
	o.resolved = true
	return nil
}

func (o *options) client(ctx context.Context) (*client.Client, error) {
	if err := o.resolve(); err != nil {
		return nil, err
	}
	tok := os.Getenv("BREAKGLASS_TOKEN")
	if o.tokenFile != "" {
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return nil, err
		}
		tok = strings.TrimSpace(string(b))
	}
	if tok == "" || o.relayURL == "" {
		store, err := login.DefaultStore(o.configDir)
		if err != nil {
			return nil, err
		}
		cur, err := store.Current()
		if err != nil && (!errors.Is(err, login.ErrNotLoggedIn) || tok == "") {
			return nil, err
		}
		if o.relayURL == "" {
			o.relayURL = cur.Relay
		}
		if tok == "" {
			if o.relayURL != cur.Relay {
				return nil, fmt.Errorf("your login is for the relay %s, not %s: run kubectl breakglass login --relay %s", cur.Relay, o.relayURL, o.relayURL)
			}
			if tok, err = store.Token(ctx, cur); err != nil {
				return nil, err
			}
		}
	}
	if o.relayURL == "" {
		return nil, errors.New("no relay: pass --relay, set BREAKGLASS_RELAY, or run kubectl breakglass login --relay URL")
	}
	return &client.Client{BaseURL: o.relayURL, Token: tok}, nil
}

func (o *options) target(name string) (client.Target, error) {
	if err := o.resolve(); err != nil {
		return client.Target{}, err
	}
	if o.cluster == "" || o.namespace == "" {
		return client.Target{}, errors.New("no cluster or namespace: pass --cluster and -n, or use a kubeconfig context that names them")
	}
	return client.Target{Cluster: o.cluster, Namespace: o.namespace, Name: name}, nil
}

// clientFor is the client and the target for a session named name (empty
// for a request), as every command needs them.
func (o *options) clientFor(ctx context.Context, name string) (*client.Client, client.Target, error) {
	c, err := o.client(ctx)
	if err != nil {
		return nil, client.Target{}, err
	}
	t, err := o.target(name)
	return c, t, err
}
