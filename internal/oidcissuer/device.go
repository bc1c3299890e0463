package oidcissuer

import (
	"crypto/rand"
	"html/template"
	"net/http"
	"strings"
	"time"
)

// The device authorization grant (RFC 8628), for a CLI on a machine with no
// browser (a remote shell): the CLI shows a short user code and a page to
// open elsewhere; the person signs in there and enters the code; the CLI
// polls the token endpoint until that is done.

const (
	deviceGrantType = "urn:ietf:params:oauth:grant-type:device_code"
	deviceCodeTTL   = 10 * time.Minute
	// devicePollEvery is the interval the CLI is told to keep between polls;
	// one second keeps the tests quick (real issuers say five).
	devicePollEvery = time.Second
)

type deviceAuth struct {
	client, userCode string
	expires          time.Time
	// person is set once someone signed in with the user code; denied once
	// they refused.
	person *Person
	denied bool
}

var deviceErrors = map[string]string{
	"authorization_pending": "the person has not entered the user code yet",
	"access_denied":         "the person refused",
	"expired_token":         "the device code expired: start again",
	"invalid_grant":         "the device code is unknown, used, or not for this client",
}

// deviceCode starts a device authorization for a registered client.
func (f *flows) deviceCode(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, "invalid_request", "a malformed form")
		return
	}
	client := r.PostForm.Get("client_id")
	f.mu.Lock()
	_, known := f.clients[client]
	f.mu.Unlock()
	if !known {
		tokenError(w, "invalid_client", "unknown client_id")
		return
	}
	device, user := randomToken(), userCode()
	f.mu.Lock()
	if f.devices == nil {
		f.devices = map[string]*deviceAuth{}
	}
	f.devices[device] = &deviceAuth{client: client, userCode: user, expires: time.Now().Add(deviceCodeTTL)}
	f.mu.Unlock()
	page := "http://" + r.Host + "/device"
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, map[string]any{"device_code": device, "user_code": user, "verification_uri": page,
		"verification_uri_complete": page + "?user_code=" + user,
		"expires_in":                int(deviceCodeTTL.Seconds()), "interval": int(devicePollEvery.Seconds())})
}

// userCode is eight letters a person types easily (no vowels, so no words;
// RFC 8628 6.1), shown as XXXX-XXXX.
func userCode() string {
	const letters = "BCDFGHJKLMNPQRSTVWXZ"
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b[:4]) + "-" + string(b[4:])
}

// deviceGrant answers a poll for device: the grant once someone signed in,
// else the RFC's error code. Called with f.mu held; a granted code is used up.
func (f *flows) deviceGrant(device, client string) (*grant, string) {
	d := f.devices[device]
	switch {
	case d == nil || d.client != client:
		return nil, "invalid_grant"
	case time.Now().After(d.expires):
		delete(f.devices, device)
		return nil, "expired_token"
	case d.denied:
		delete(f.devices, device)
		return nil, "access_denied"
	case d.person == nil:
		return nil, "authorization_pending"
	}
	delete(f.devices, device)
	return &grant{client: d.client, person: *d.person, expires: d.expires}, ""
}

var devicePage = template.Must(template.New("device").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in a device: breakglass demo issuer</title></head>
<body><main><h1>Sign in a device (demo issuer)</h1>
{{if .Done}}<p role="status">{{.Done}}</p>{{else}}
<form method="post" action="device">
<label>Code shown by the device <input name="user_code" value="{{.UserCode}}" autocomplete="off" required></label>
{{range $name, $p := .People}}<button type="submit" name="username" value="{{$name}}">{{$name}} ({{$p.Email}})</button>
{{end}}<button type="submit" name="deny" value="1">Refuse</button>
</form>{{end}}</main></body></html>
`))

func (f *flows) devicePage(w http.ResponseWriter, r *http.Request) {
	f.renderDevice(w, http.StatusOK, r.URL.Query().Get("user_code"), "")
}

func (f *flows) renderDevice(w http.ResponseWriter, status int, code, done string) {
	f.mu.Lock()
	people := make(map[string]Person, len(f.people))
	for k, v := range f.people {
		people[k] = v
	}
	f.mu.Unlock()
	w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = devicePage.Execute(w, map[string]any{"UserCode": code, "People": people, "Done": done})
}

// deviceDecide signs a person in (or refuses) for the device showing the code.
func (f *flows) deviceDecide(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "a malformed form", http.StatusBadRequest)
		return
	}
	code := strings.ToUpper(strings.TrimSpace(r.PostForm.Get("user_code")))
	f.mu.Lock()
	var d *deviceAuth
	for _, c := range f.devices {
		if c.userCode == code && time.Now().Before(c.expires) && c.person == nil && !c.denied {
			d = c
		}
	}
	p, known := f.people[r.PostForm.Get("username")]
	refused := r.PostForm.Get("deny") != ""
	switch {
	case d == nil:
	case refused:
		d.denied = true
	case known:
		d.person = &p
	}
	f.mu.Unlock()
	switch {
	case d == nil:
		f.renderDevice(w, http.StatusBadRequest, "", "No device is waiting for that code: check it, or start again on the device.")
	case refused:
		f.renderDevice(w, http.StatusOK, "", "Refused: the device is not signed in.")
	case !known:
		f.renderDevice(w, http.StatusBadRequest, code, "")
	default:
		f.renderDevice(w, http.StatusOK, "", "Signed in: you can close this page and go back to the device.")
	}
}
