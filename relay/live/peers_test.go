package live

import "testing"

// TestPeerURLs: a replica's name can only fill the template's {replica}:
// no name reaches a host outside the peers' domain, and a template that
// names no replica, or is not http(s), is refused at start.
func TestPeerURLs(t *testing.T) {
	p := &Peers{Self: "breakglass-relay-0", URL: "https://{replica}.breakglass-relay-peers.breakglass-system.svc:8443"}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	u, err := p.urlOf("breakglass-relay-1")
	if err != nil || u.String() != "https://breakglass-relay-1.breakglass-relay-peers.breakglass-system.svc:8443" {
		t.Fatalf("urlOf: %v, %v", u, err)
	}
	for _, name := range []string{"", "evil.example.com", "evil.example.com:443/x", "a/b", "x@evil", "EVIL", "-a", "a?b", "a#", "user:pass@host",
		"a234567890123456789012345678901234567890123456789012345678901234"} {
		if u, err := p.urlOf(name); err == nil {
			t.Errorf("replica name %q gave %s", name, u)
		}
	}
	for _, tmpl := range []string{"https://breakglass-relay-0:8443", "ftp://{replica}:21", "{replica}", "https://"} {
		if err := (&Peers{Self: "r0", URL: tmpl}).Check(); err == nil {
			t.Errorf("template %q accepted", tmpl)
		}
	}
}
