// Package console is the relay's web console: the page people request,
// approve, watch and review sessions in, and its sign-in. The page is built
// from web/ by esbuild (npm, with a lockfile) into dist/, which the relay's
// binary embeds; it calls the relay's API only, on the relay's own origin,
// with a session cookie the relay sets after an OIDC sign-in. No Kubernetes
// credential and no OIDC token ever reaches the page's JavaScript.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// dist is what `make console` builds; "all:" keeps the placeholder that
// lets the package compile before the first build.
//
//go:embed all:dist
var dist embed.FS

// Prefix is where the console is served; deep links are under it.
const Prefix = "/console/"

// assets is the built page, or nil when it was not built.
func assets() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		return nil
	}
	if _, err := fs.Stat(sub, "index.html"); err != nil {
		return nil
	}
	return sub
}

// contentSecurityPolicy allows the page's own scripts and nothing inline.
// Styles: xterm.js and the asciicast player write <style> elements for the
// terminal's cell sizes and colours, so inline styles are allowed (never
// inline scripts); the player's terminal core is WebAssembly, hence
// 'wasm-unsafe-eval' (compiling wasm, not eval of JavaScript). connect-src
// 'self' covers the terminal's WebSocket on the same host.
const contentSecurityPolicy = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// headers are set on every console and sign-in answer.
func (c *Console) headers(h http.Header) {
	if c.secure {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// pages serves the built page: files under /console/assets/ as they are,
// every other path under /console/ the page itself (it routes in the
// browser), for a signed-in person; others go through sign-in and come
// back to the same path.
func (c *Console) pages(w http.ResponseWriter, r *http.Request) {
	c.headers(w.Header())
	files := assets()
	if files == nil {
		http.Error(w, "this relay was built without its console: run make console, then build it again", http.StatusNotFound)
		return
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, Prefix+"assets/"); ok {
		// Names carry their content's hash: cache them for good.
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		http.ServeFileFS(w, r, files, path.Join("assets", path.Clean("/"+rest)))
		return
	}
	if _, ok := c.signedIn(r); !ok {
		http.Redirect(w, r, "/auth/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusFound)
		return
	}
	page, err := fs.ReadFile(files, "index.html")
	if err != nil {
		http.Error(w, "the console's page is missing from this build", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(page)
}
