package createapp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pinBackstage sets the app's root resolutions to the versions create-app
// itself writes (its template's carets aside): the app as it was when
// create-app was released, not today's newest in each range.
func pinBackstage(t *testing.T, r *run, work, app string) {
	t.Helper()
	out := r.do("versions", work, "node", "-e",
		`process.stdout.write(JSON.stringify(require(process.argv[1]).packageVersions))`,
		filepath.Join(work, "tools", "node_modules", "@backstage", "create-app", "dist", "lib", "versions.cjs.js"))
	var versions map[string]string
	if err := json.Unmarshal([]byte(out), &versions); err != nil {
		t.Fatalf("create-app's versions: %v: %s", err, out)
	}
	pins := map[string]string{}
	for name, v := range versions {
		if strings.HasPrefix(name, "@backstage/") {
			pins[name] = v
		}
	}
	if pins["@backstage/cli"] == "" || pins["@backstage/frontend-plugin-api"] == "" {
		t.Fatalf("create-app %s's versions name no @backstage/cli or frontend-plugin-api: %v", createAppVersion, versions)
	}
	t.Logf("pinned to create-app %s's Backstage %s (%d packages; %s=1 for the newest in range)", createAppVersion, versions["root"], len(pins), unpinnedEnv)
	addResolutions(t, app, pins)
}

// addResolutions adds to the app's root package.json's resolutions.
func addResolutions(t *testing.T, app string, add map[string]string) {
	t.Helper()
	file := filepath.Join(app, "package.json")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var pkg map[string]any
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	res, _ := pkg["resolutions"].(map[string]any)
	if res == nil {
		res = map[string]any{}
	}
	for k, v := range add {
		res[k] = v
	}
	pkg["resolutions"] = res
	b, err = json.MarshalIndent(pkg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// installedVersions names the versions of a few @backstage packages the
// app's install resolved.
func installedVersions(t *testing.T, app string) string {
	t.Helper()
	var got []string
	for _, p := range []string{"cli", "frontend-plugin-api", "frontend-defaults", "core-plugin-api", "core-components",
		"plugin-catalog-react", "backend-defaults", "backend-plugin-api", "plugin-catalog-node"} {
		b, err := os.ReadFile(filepath.Join(app, "node_modules", "@backstage", p, "package.json"))
		if err != nil {
			got = append(got, p+" (none)")
			continue
		}
		var pkg struct{ Version string }
		_ = json.Unmarshal(b, &pkg)
		got = append(got, p+" "+pkg.Version)
	}
	return strings.Join(got, ", ")
}

// A block is one fenced code block of the doc.
type block struct{ lang, text string }

// installBlocks are the code blocks of docs/backstage.md's Install
// section, in order, each unindented.
func installBlocks(t *testing.T) []block {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "backstage.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## Install\n")
	if start < 0 {
		t.Fatal("docs/backstage.md has no ## Install section")
	}
	section := doc[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	var blocks []block
	var cur *block
	var indent string
	for _, line := range strings.Split(section, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur, indent = &block{lang: strings.TrimPrefix(trimmed, "```")}, line[:len(line)-len(trimmed)]
		case cur != nil && strings.HasPrefix(trimmed, "```"):
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += strings.TrimPrefix(line, indent) + "\n"
		}
	}
	return blocks
}

// follow does what the Install section says, in its order: the yarn
// commands with each of Tower's packages given as its tarball, App.tsx,
// the backend's index.ts and app-config.yaml.
func follow(t *testing.T, r *run, app string, tarballs map[string]string) {
	t.Helper()
	// The packages name each other by version, which only a registry
	// resolves: the root resolutions stand in for it, each by its tarball.
	registry := map[string]string{}
	for name, tgz := range tarballs {
		registry[name] = "file:" + tgz
	}
	addResolutions(t, app, registry)
	did := map[string]int{}
	for _, b := range installBlocks(t) {
		switch {
		case b.lang == "sh" && strings.Contains(b.text, "yarn "):
			for _, line := range strings.Split(strings.TrimSpace(b.text), "\n") {
				args := strings.Fields(line)
				if len(args) == 0 || args[0] != "yarn" {
					t.Fatalf("the Install section's command %q is not a yarn command this check knows", line)
				}
				for i, a := range args {
					if strings.HasPrefix(a, "@tower-dev/") {
						tgz, ok := tarballs[a]
						if !ok {
							t.Fatalf("the Install section adds %s, which the workspace does not have", a)
						}
						args[i] = a + "@file:" + tgz
					}
				}
				if out, err := r.try("doc: yarn add", app, args...); err != nil {
					t.Fatalf("the Install section's %q (with tarballs: %s) fails: %v\n%s", line, strings.Join(args, " "), err, tail(out, 60))
				}
				did["sh"]++
			}
		case b.lang == "tsx" && strings.Contains(b.text, "createApp("):
			appTsx(t, filepath.Join(app, "packages", "app", "src", "App.tsx"), b.text)
			did["tsx"]++
		case b.lang == "ts" && strings.Contains(b.text, "backend.add("):
			backendIndex(t, filepath.Join(app, "packages", "backend", "src", "index.ts"), b.text)
			did["ts"]++
		case b.lang == "yaml" && regexp.MustCompile(`(?m)^breakglass:`).MatchString(b.text):
			appConfig(t, filepath.Join(app, "app-config.yaml"), b.text)
			did["yaml"]++
		}
	}
	if did["sh"] < 2 || did["tsx"] != 1 || did["ts"] != 1 || did["yaml"] != 1 {
		t.Fatalf("the Install section's blocks are not the ones this check follows (did %v): update it", did)
	}
}

// What an App.tsx snippet may use and where each comes from.
var frontendImports = map[string]string{
	"createFrontendModule": "import { createFrontendModule } from '@backstage/frontend-plugin-api';",
	"SignInPageBlueprint":  "import { SignInPageBlueprint } from '@backstage/plugin-app-react';",
	"SignInPage":           "import { SignInPage } from '@backstage/core-components';",
	"notificationsPlugin":  "import notificationsPlugin from '@backstage/plugin-notifications/alpha';",
	"catalogPlugin":        "import catalogPlugin from '@backstage/plugin-catalog/alpha';",
	"createApp":            "import { createApp } from '@backstage/frontend-defaults';",
}

var featuresRE = regexp.MustCompile(`(?s)features:\s*\[([^\]]*)\]`)

// appTsx puts the doc's snippet into create-app's App.tsx, as an admin
// adding it to an existing app does: its imports with the app's, its
// declarations, and its createApp's features together with the app's own
// ones (create-app's nav and home modules). Each name the snippet uses
// without importing it, and the app does not import either, is an error
// (pasted as is, the app does not type-check) and its import is added.
func appTsx(t *testing.T, file, snippet string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	template := string(b)
	var imports, body []string
	var export string
	for _, line := range strings.Split(snippet, "\n") {
		switch {
		case export != "":
			export += line + "\n"
		case strings.HasPrefix(line, "//") || strings.TrimSpace(line) == "":
		case strings.HasPrefix(line, "import "):
			imports = append(imports, line)
		case strings.HasPrefix(line, "export default createApp("):
			export = line + "\n"
		default:
			body = append(body, line)
		}
	}
	at := strings.Index(template, "export default createApp(")
	docFeatures, appFeatures := featuresRE.FindStringSubmatch(export), featuresRE.FindStringSubmatch(template)
	if export == "" || at < 0 || docFeatures == nil || appFeatures == nil {
		t.Fatalf("the doc's App.tsx snippet or create-app's App.tsx has no createApp({ features: [...] }): update this check\n%s\n%s", snippet, template)
	}
	features := splitList(docFeatures[1])
	for _, f := range splitList(appFeatures[1]) {
		if !slices.Contains(features, f) {
			features = append(features, f)
		}
	}
	export = strings.Replace(export, docFeatures[0], "features: ["+strings.Join(features, ", ")+"]", 1)
	code := strings.Join(body, "\n") + "\n" + export
	imported := template[:at] + strings.Join(imports, "\n")
	var missing []string
	for name, imp := range frontendImports {
		if regexp.MustCompile(`\b`+name+`\b`).MatchString(code) && !regexp.MustCompile(`(?m)^import [^;]*\b`+name+`\b[^;]*from`).MatchString(imported) {
			missing = append(missing, name)
			imports = append(imports, imp)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("docs/backstage.md's App.tsx snippet uses %s without importing them: pasted as is, tsc says \"Cannot find name\" (the imports are added here)",
			strings.Join(missing, ", "))
	}
	out := strings.TrimRight(template[:at], "\n") + "\n" + strings.Join(imports, "\n") + "\n\n" + code
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("App.tsx:\n%s", out)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// backendIndex adds the doc's backend.add lines before create-app's
// backend.start().
func backendIndex(t *testing.T, file, snippet string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var adds []string
	for _, line := range strings.Split(snippet, "\n") {
		if strings.HasPrefix(line, "backend.add(") {
			adds = append(adds, line)
		}
	}
	src := string(b)
	if !strings.Contains(src, "\nbackend.start();") {
		t.Fatalf("create-app's backend index.ts has no backend.start(): update this check\n%s", src)
	}
	src = strings.Replace(src, "\nbackend.start();", "\n"+strings.Join(adds, "\n")+"\n\nbackend.start();", 1)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// appConfig adds the doc's breakglass: block (not its auth: block, which
// needs the OIDC provider's module and a reachable issuer) to
// app-config.yaml.
func appConfig(t *testing.T, file, snippet string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`(?m)^breakglass:`).Match(b) {
		t.Fatal("create-app's app-config.yaml already has breakglass:")
	}
	var lines []string
	in := false
	for _, line := range strings.Split(snippet, "\n") {
		top := line != "" && line[0] != ' ' && line[0] != '#'
		if top {
			in = strings.HasPrefix(line, "breakglass:")
		}
		if in {
			lines = append(lines, line)
		}
	}
	out := strings.TrimRight(string(b), "\n") + "\n\n" + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}
