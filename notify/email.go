package notify

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"time"
	"unicode"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Email sends text/plain mail through an SMTP server that offers STARTTLS;
// one that does not is refused, never written to in the clear.
type Email struct {
	// Server is host:port, e.g. smtp.example.com:587.
	Server string
	// From is the sender, e.g. "Breakglass <breakglass@example.com>".
	From string
	To   []string
	// UsernameFile and PasswordFile, when set, hold the AUTH PLAIN
	// credentials, sent only after STARTTLS.
	UsernameFile, PasswordFile string
	// TLS is the STARTTLS configuration (RootCAs for a private CA); its
	// ServerName defaults to Server's host.
	TLS *tls.Config
	// Timeout bounds one delivery (default 30s).
	Timeout time.Duration
	Now     func() time.Time
}

// Kind is "email".
func (e *Email) Kind() string { return "email" }

// Deliver sends m as one mail to every address in To.
func (e *Email) Deliver(ctx context.Context, m Message) error {
	from, err := mail.ParseAddress(e.From)
	if err != nil {
		return permanent(fmt.Errorf("email: from %q: %w", e.From, err))
	}
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	raw, err := emailMessage(from, e.To, m, now(), messageID(from.Address))
	if err != nil {
		return permanent(err)
	}
	rcpts := make([]string, len(e.To))
	for i, t := range e.To {
		a, err := mail.ParseAddress(t)
		if err != nil {
			return permanent(fmt.Errorf("email: to %q: %w", t, err))
		}
		rcpts[i] = a.Address
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, _, err := net.SplitHostPort(e.Server)
	if err != nil {
		return permanent(fmt.Errorf("email: server %q: %w", e.Server, err))
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", e.Server)
	if err != nil {
		return fmt.Errorf("email: %w", err)
	}
	// The client sets its own deadlines per command; closing the
	// connection is what makes a hung server give up with ctx.
	defer context.AfterFunc(ctx, func() { _ = conn.Close() })()
	cfg := &tls.Config{}
	if e.TLS != nil {
		cfg = e.TLS.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	cfg.MinVersion = max(cfg.MinVersion, tls.VersionTLS12)
	// NewClientStartTLS refuses a server whose EHLO does not offer
	// STARTTLS; there is no fall back to plaintext.
	c, err := smtp.NewClientStartTLS(conn, cfg)
	if err != nil {
		_ = conn.Close()
		var se *smtp.SMTPError
		if !errors.As(err, &se) && strings.Contains(err.Error(), "STARTTLS") {
			return permanent(fmt.Errorf("email: %s does not offer STARTTLS: no mail is sent in the clear", e.Server))
		}
		return smtpError(err)
	}
	defer c.Close()
	if e.UsernameFile != "" {
		user, err := readSecret(e.UsernameFile)
		if err != nil {
			return err
		}
		password, err := readSecret(e.PasswordFile)
		if err != nil {
			return err
		}
		if !c.SupportsAuth(sasl.Plain) {
			return permanent(fmt.Errorf("email: %s offers no AUTH PLAIN after STARTTLS", e.Server))
		}
		if err := c.Auth(sasl.NewPlainClient("", user, password)); err != nil {
			return smtpError(err)
		}
	}
	if state, ok := c.TLSConnectionState(); !ok || !state.HandshakeComplete {
		return permanent(errors.New("email: the connection is not encrypted"))
	}
	if err := c.SendMail(from.Address, rcpts, bytes.NewReader(raw)); err != nil {
		return smtpError(err)
	}
	_ = c.Quit()
	return nil
}

// smtpError keeps the server's verdict: a 4xx reply may pass, a 5xx won't.
func smtpError(err error) error {
	var se *smtp.SMTPError
	if errors.As(err, &se) && !se.Temporary() {
		return permanent(fmt.Errorf("email: %w", err))
	}
	var ve *tls.CertificateVerificationError
	if errors.As(err, &ve) {
		return permanent(fmt.Errorf("email: %w", err))
	}
	return fmt.Errorf("email: %w", err)
}

func messageID(from string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	domain := "breakglass.invalid"
	if i := strings.LastIndexByte(from, '@'); i >= 0 && i < len(from)-1 {
		domain = from[i+1:]
	}
	return "<" + hex.EncodeToString(b) + "@" + domain + ">"
}

// header flattens s to one line: no CR, LF or other control character
// from a name or a reason can start a header of its own.
func header(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return fit(strings.Join(strings.Fields(s), " "), max, keep)
}

// emailMessage is m as an RFC 5322 message, quoted-printable text.
func emailMessage(from *mail.Address, to []string, m Message, now time.Time, id string) ([]byte, error) {
	var rcpts []string
	for _, t := range to {
		a, err := mail.ParseAddress(t)
		if err != nil {
			return nil, fmt.Errorf("email: to %q: %w", t, err)
		}
		rcpts = append(rcpts, a.String())
	}
	subject, body := emailText(m)
	var b bytes.Buffer
	for _, h := range [][2]string{
		{"From", from.String()},
		{"To", strings.Join(rcpts, ", ")},
		{"Subject", mime.QEncoding.Encode("utf-8", subject)},
		{"Date", now.Format(time.RFC1123Z)},
		{"Message-ID", id},
		{"MIME-Version", "1.0"},
		{"Content-Type", "text/plain; charset=utf-8"},
		{"Content-Transfer-Encoding", "quoted-printable"},
		// RFC 3834: no out-of-office answers to a machine.
		{"Auto-Submitted", "auto-generated"},
	} {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	if _, err := qp.Write([]byte(body)); err != nil {
		return nil, err
	}
	if err := qp.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// emailText is m's subject (one line, cut) and body.
func emailText(m Message) (string, string) {
	var b strings.Builder
	if m.Digest() {
		title := digestTitle(m.Notices)
		fmt.Fprintf(&b, "%s\n\nThe rate limit held these back. Each link only opens its page: approving happens in the portal after signing in.\n", title)
		for i, n := range m.Notices {
			if i == digestMax {
				fmt.Fprintf(&b, "\nand %d more: see the portal.\n", len(m.Notices)-digestMax)
				break
			}
			fmt.Fprintf(&b, "\n- %s\n  Why: %s\n  %s\n", plain(n.Summary()), indent(fit(plain(n.Reason), 300, keep)), n.Link)
		}
		return header("[breakglass] "+title, 150), b.String()
	}
	n := m.Notices[0]
	approvers := n.Approvers
	if approvers == "" {
		approvers = "as the portal's permissions say"
	}
	fmt.Fprintf(&b, "%s\n\n", n.Title())
	for _, f := range [][2]string{{"Who", n.Requester}, {"What", n.What()}, {"Why", n.Reason}, {"Decided", n.Decided}, {"Until", n.Until()}, {"Approvers", approvers}, {"For", n.To}} {
		if f[1] != "" {
			fmt.Fprintf(&b, "%-10s %s\n", f[0]+":", indent(plain(f[1])))
		}
	}
	fmt.Fprintf(&b, "\nOpen: %s\n\n%s\n\nSent by breakglass (%s, %s).\n", n.Link, n.Action(), n.Kind, n.At.UTC().Format(time.RFC3339))
	subject := fmt.Sprintf("[breakglass] %s: %s, %s/%s on %s: %s", n.Title(), n.Requester, n.Namespace, n.Pod, n.Cluster, n.Reason)
	return header(subject, 150), b.String()
}

// indent keeps a multi-line value under its label.
func indent(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\n           ")
}
