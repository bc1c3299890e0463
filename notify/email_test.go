package notify

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// received is one mail the test server took.
type received struct {
	from  string
	rcpts []string
	data  []byte
	tls   bool
	user  string
}

// mailbox is a go-smtp backend that hands each mail to the test.
type mailbox struct {
	got      chan received
	password string
}

type mailSession struct {
	box *mailbox
	c   *smtp.Conn
	m   received
}

func (b *mailbox) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &mailSession{box: b, c: c}, nil
}

func (s *mailSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *mailSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, password string) error {
		if password != s.box.password {
			return errors.New("bad credentials")
		}
		s.m.user = user
		return nil
	}), nil
}

func (s *mailSession) Mail(from string, _ *smtp.MailOptions) error { s.m.from = from; return nil }
func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.m.rcpts = append(s.m.rcpts, to)
	return nil
}

func (s *mailSession) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.m.data = data
	_, s.m.tls = s.c.TLSConnectionState()
	s.box.got <- s.m
	return nil
}

func (s *mailSession) Reset()        {}
func (s *mailSession) Logout() error { return nil }

// startSMTP runs a go-smtp server on loopback, offering STARTTLS with a
// certificate made now when withTLS; it returns its address and the CA
// file that certificate is checked against.
func startSMTP(t *testing.T, withTLS bool) (addr, caFile string, box *mailbox) {
	t.Helper()
	box = &mailbox{got: make(chan received, 10), password: "s3cret"}
	srv := smtp.NewServer(box)
	srv.Domain = "localhost"
	srv.ErrorLog = log.New(io.Discard, "", 0) // a refused client is the point of some tests
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	if withTLS {
		cert, pemBytes := selfSigned(t)
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		caFile = writeFile(t, "ca.pem", string(pemBytes))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-served
	})
	return l.Addr().String(), caFile, box
}

// selfSigned is a certificate for 127.0.0.1, valid for an hour from now.
func selfSigned(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smtp test"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// emailSink is the sink a config for addr builds, as the relay builds it.
func emailSink(t *testing.T, addr, caFile string) Sink {
	t.Helper()
	c := &Config{Email: &EmailConfig{Server: addr, From: "Breakglass <breakglass@example.com>",
		UsernameFile: writeFile(t, "user", "relay\n"), PasswordFile: writeFile(t, "password", "s3cret\n"), CAFile: caFile}}
	s, err := c.sink(Destination{Sink: "email", Addresses: []string{"Shop On-call <oncall@shop.example>", "sre@example.com"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEmailOverSTARTTLS(t *testing.T) {
	addr, caFile, box := startSMTP(t, true)
	n := makeNotice("request.new", "s-1", func(s *v1alpha1.Session) { s.Spec.Reason = "checkout returns 500s\nsince 09:40, über-urgent" })
	if err := emailSink(t, addr, caFile).Deliver(context.Background(), Message{Notices: []Notice{n}}); err != nil {
		t.Fatal(err)
	}
	var m received
	select {
	case m = <-box.got:
	case <-time.After(10 * time.Second):
		t.Fatal("no mail arrived")
	}
	if !m.tls || m.user != "relay" || m.from != "breakglass@example.com" || strings.Join(m.rcpts, ",") != "oncall@shop.example,sre@example.com" {
		t.Fatalf("tls %v, user %q, from %q, to %v", m.tls, m.user, m.from, m.rcpts)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(m.data))
	if err != nil {
		t.Fatal(err)
	}
	h := msg.Header
	subject, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Date(); err != nil {
		t.Errorf("Date: %v", err)
	}
	for k, want := range map[string]string{
		"From": `"Breakglass" <breakglass@example.com>`, "To": `"Shop On-call" <oncall@shop.example>, <sre@example.com>`,
		"MIME-Version": "1.0", "Content-Type": "text/plain; charset=utf-8", "Content-Transfer-Encoding": "quoted-printable",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if id := h.Get("Message-ID"); !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@example.com>") {
		t.Errorf("Message-ID: %q", id)
	}
	if want := "[breakglass] Debug access requested: alice@example.com, shop/web-1 on flight-1: checkout returns 500s since 09:40, über-urgent"; subject != want {
		t.Errorf("Subject: %q\nwant     %q", subject, want)
	}
	body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Who:       alice@example.com", "Why:       checkout returns 500s\r\n           since 09:40, über-urgent",
		"Until:     30m from its start", "Approvers: shop-oncall", "Open: https://tower.example/sessions/flight-1/shop/s-1/approve", "after signing in"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the body does not say %q:\n%s", want, body)
		}
	}
}

func TestEmailRefusesAServerWithoutSTARTTLS(t *testing.T) {
	addr, _, box := startSMTP(t, false)
	err := emailSink(t, addr, "").Deliver(context.Background(), Message{Notices: []Notice{makeNotice("request.new", "s-1")}})
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("err = %v, want a permanent refusal naming STARTTLS", err)
	}
	select {
	case m := <-box.got:
		t.Fatalf("a mail went in the clear: %s", m.data)
	default: // Deliver has returned: a mail it sent would be here
	}
}

func TestEmailRefusesAnUntrustedCertificate(t *testing.T) {
	addr, _, box := startSMTP(t, true)
	// No caFile: the system's roots do not know the test's certificate.
	err := emailSink(t, addr, "").Deliver(context.Background(), Message{Notices: []Notice{makeNotice("request.new", "s-1")}})
	if err == nil || !IsPermanent(err) {
		t.Fatalf("err = %v: want a permanent refusal of a server whose certificate nobody trusts", err)
	}
	select {
	case <-box.got:
		t.Fatal("the mail arrived")
	default:
	}
}

func TestEmailHeadersResistInjection(t *testing.T) {
	n := makeNotice("request.new", "s-1", func(s *v1alpha1.Session) {
		s.Spec.Requester = "alice\r\nBcc: evil@example.net"
		s.Spec.Reason = "x\r\nX-Injected: yes\n\nfake body\rX-Other: 1"
	})
	from, _ := mail.ParseAddress("breakglass@example.com")
	raw, err := emailMessage(from, []string{"oncall@shop.example"}, Message{Notices: []Notice{n}}, testAt, "<1@example.com>")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"Bcc", "X-Injected", "X-Other"} {
		if v := msg.Header.Get(k); v != "" {
			t.Errorf("header %s: %q was injected", k, v)
		}
	}
	if len(msg.Header) != 9 {
		t.Errorf("%d headers, want the 9 written: %v", len(msg.Header), msg.Header)
	}
	end := bytes.Index(raw, []byte("\r\n\r\n"))
	if end < 0 {
		t.Fatalf("no blank line after the headers: %q", raw)
	}
	head := string(raw[:end])
	for _, line := range strings.Split(head, "\r\n") {
		if strings.ContainsAny(line, "\r\n") {
			t.Errorf("a header line holds a bare CR or LF: %q", line)
		}
	}
	if s := msg.Header.Get("Subject"); !strings.Contains(s, "alice Bcc: evil@example.net") {
		t.Errorf("Subject: %q: the names should be flattened onto one line", s)
	}
}
