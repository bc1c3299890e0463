package relay

import (
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tower-dev/breakglass/relay/api"
	"github.com/tower-dev/breakglass/relay/wire"
)

// TestOpenAPIDescribesEveryRoute: the document a portal codes against names
// exactly the endpoints the relay serves.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	raw, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var documented, served []string
	ids := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if method == "parameters" {
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
			// A generated client names its calls by operationId.
			id, _ := op.(map[string]any)["operationId"].(string)
			if id == "" || ids[id] {
				t.Errorf("%s %s: operationId %q is missing or not unique", method, path, id)
			}
			ids[id] = true
		}
	}
	for _, r := range (&Server{metrics: newMetrics()}).routes() {
		served = append(served, r.method+" "+r.path)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Fatalf("openapi.yaml documents\n  %s\nthe relay serves\n  %s", strings.Join(documented, "\n  "), strings.Join(served, "\n  "))
	}
}

const goodConfig = `
listen: ":8443"
oidc: {issuer: "https://idp.example.com", audience: tower}
clusters:
- {name: prod, tier: flight, debugImage: "r.example/debug@sha256:aa"}
- {name: dev, tier: ground, debugImage: "r.example/debug@sha256:aa", requireApproval: false}
permissions:
- {groups: [shop], namespaces: [shop], actions: [request]}
- {groups: [sre], clusters: [prod], namespaces: ["*"], actions: [approve, end]}
recording: {dir: /var/lib/breakglass}
`

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "relay.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfig(t *testing.T) {
	c, err := LoadConfig(writeConfig(t, goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.Idle.Duration != 10*time.Minute || c.Limits.Disconnect.Duration != 2*time.Minute || c.OIDC.UsernameClaim != "email" ||
		c.Recording.Retention.Duration != 365*24*time.Hour {
		t.Fatalf("defaults: %+v %+v", c.Limits, c.OIDC)
	}
	if !c.Clusters[0].NeedsApproval() || c.Clusters[1].NeedsApproval() {
		t.Fatal("approval: Flight always, this Ground cluster not")
	}
	for _, tc := range []struct{ name, edit, want string }{
		{"unknown field", "idleLimit: 5m\n", "unknown field"},
		{"flight without approval", "clusters:\n- {name: prod, tier: flight, debugImage: x, requireApproval: false}\n", "always requires approval"},
		{"bad tier", "clusters:\n- {name: prod, tier: sky, debugImage: x}\n", `clusters[0].tier: Unsupported value: "sky"`},
		{"bad name", "clusters:\n- {name: Prod_1, tier: ground, debugImage: x}\n", "not a DNS label"},
		{"twice", "clusters:\n- {name: a, tier: ground, debugImage: x}\n- {name: a, tier: ground, debugImage: x}\n", `clusters[1].name: Duplicate value: "a"`},
		{"no image", "clusters:\n- {name: a, tier: ground}\n", "debugImage"},
		{"bad action", "permissions:\n- {groups: [g], namespaces: [n], actions: [exec]}\n", `permissions[0].actions[0]: Unsupported value: "exec"`},
		{"both stores", "recording: {dir: /x, s3: {bucket: b}}\n", "exactly one of dir and s3"},
		{"no store", "recording: {}\n", "no store, no session"},
		{"bad origin", "allowedOrigins: [\"tower.example.com/path\"]\n", "not an origin"},
		{"bad console url", "console: {url: \"https://relay.example.com/console\"}\n", "console.url"},
		{"console over plain http", "console: {url: \"http://relay.example.com\"}\n", "only over https"},
		{"heartbeat", "limits: {heartbeat: 5m, disconnect: 1m}\n", "shorter than limits.disconnect"},
		{"no issuer", "oidc: {audience: tower}\n", "oidc.issuer"},
		{"rekor v3", "rekor: {url: \"https://rekor.example\", keyFile: k, apiVersion: 3}\n", "rekor.apiVersion: Unsupported value: 3"},
		{"rekor v2 without its key", "rekor: {url: \"https://rekor.example\", keyFile: k, apiVersion: 2}\n", "rekor.publicKeyFile"},
		{"rekor v2 with a certificate", "rekor: {url: \"https://rekor.example\", keyFile: k, apiVersion: 2, publicKeyFile: p, certificateFile: c}\n", "rekor.certificateFile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(writeConfig(t, replaceKeys(goodConfig, tc.edit)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// replaceKeys swaps the top-level keys edit sets for edit's lines.
func replaceKeys(base, edit string) string {
	keys := map[string]bool{}
	for _, l := range strings.Split(edit, "\n") {
		if k, _, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "-") {
			keys[k] = true
		}
	}
	var out []string
	skipping := false
	for _, l := range strings.Split(base, "\n") {
		if k, _, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "-") {
			skipping = keys[k]
		}
		if !skipping {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n") + "\n" + edit
}

func TestPermissions(t *testing.T) {
	c, err := LoadConfig(writeConfig(t, goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	owner := api.Caller{Name: "alice", Groups: []string{"shop"}}
	sre := api.Caller{Name: "bob", Groups: []string{"sre"}}
	for _, tc := range []struct {
		who         api.Caller
		a           api.Action
		cluster, ns string
		want        bool
	}{
		{owner, api.ActionRequest, "prod", "shop", true},
		{owner, api.ActionRequest, "prod", "payments", false},
		{owner, api.ActionApprove, "prod", "shop", false},
		{sre, api.ActionApprove, "prod", "payments", true},
		{sre, api.ActionApprove, "dev", "payments", false},
		{sre, api.ActionReview, "prod", "payments", false},
		{api.Caller{Name: "x"}, api.ActionRequest, "prod", "shop", false},
	} {
		if got := c.Permissions.Can(tc.who, tc.a, tc.cluster, tc.ns); got != tc.want {
			t.Errorf("%s %s in %s/%s: %t, want %t", tc.who.Name, tc.a, tc.cluster, tc.ns, got, tc.want)
		}
	}
	if !c.Permissions.Sees(sre, "prod", "shop") || c.Permissions.Sees(sre, "dev", "shop") {
		t.Error("sees: any permission in the namespace, nothing else")
	}
}

func TestBearer(t *testing.T) {
	for _, tc := range []struct {
		header, protocols, want string
		ok                      bool
	}{
		{"Bearer abc", "", "abc", true},
		{"bearer abc", "", "", false},
		{"Bearer ", "", "", false},
		{"", wire.TerminalProtocol + ", " + wire.BearerProtocolPrefix + "xyz", "xyz", true},
		{"", wire.TerminalProtocol, "", false},
		{"", "", "", false},
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		if tc.protocols != "" {
			r.Header.Set("Sec-WebSocket-Protocol", tc.protocols)
		}
		got, err := bearer(r)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q %q: %q %v", tc.header, tc.protocols, got, err)
		}
	}
}

// TestValidateNamesEveryWrongField: an empty configuration is refused at
// each field it needs, all at once, and validating it changes nothing.
func TestValidateNamesEveryWrongField(t *testing.T) {
	c := &Config{}
	c.Default()
	before := *c
	got := map[string]bool{}
	for _, e := range c.Validate() {
		got[e.Field] = true
	}
	for _, f := range []string{"listen", "oidc.issuer", "oidc.audience", "clusters", "recording"} {
		if !got[f] {
			t.Errorf("no error at %s; got %v", f, got)
		}
	}
	if !reflect.DeepEqual(before, *c) {
		t.Error("Validate changed the configuration")
	}
}
