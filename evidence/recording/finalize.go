package recording

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Meta is what the manifest says about the session.
type Meta struct {
	Session     string
	Started     time.Time
	RetainUntil time.Time
	// Abnormal marks a recording finalized by someone other than the relay
	// that recorded it (it died mid-session).
	Abnormal bool
}

// FileDigest names one file's hash and size.
type FileDigest struct {
	SHA256 string `json:"sha256"`
	Size   int    `json:"size"`
}

// Manifest lists the recording's files and their hashes. Its own SHA-256 is
// what goes to the transparency log.
type Manifest struct {
	Version         int                   `json:"version"`
	Session         string                `json:"session"`
	Started         time.Time             `json:"started"`
	Segments        int                   `json:"segments"`
	EndedAbnormally bool                  `json:"endedAbnormally"`
	Files           map[string]FileDigest `json:"files"`
}

// Finalize assembles the segments under prefix into the playable recording
// and the transcript, and writes the manifest. The relay calls it at the end
// of a session; the sweeper calls it for a session whose relay died.
// Running it again over the same segments is harmless.
func Finalize(ctx context.Context, store Store, prefix string, meta Meta) (Manifest, []byte, error) {
	keys, err := store.List(ctx, prefix+segmentsDir)
	if err != nil {
		return Manifest{}, nil, err
	}
	var cast, raw bytes.Buffer
	n := 0
	for _, k := range keys {
		data, err := store.Get(ctx, k)
		if err != nil {
			return Manifest{}, nil, err
		}
		switch {
		case strings.HasSuffix(k, ".cast"):
			cast.Write(data)
			n++
		case strings.HasSuffix(k, ".raw"):
			raw.Write(data)
		}
	}
	if n == 0 {
		return Manifest{}, nil, fmt.Errorf("recording %s: no segments", prefix)
	}
	m := Manifest{Version: 1, Session: meta.Session, Started: meta.Started.UTC(), Segments: n, EndedAbnormally: meta.Abnormal,
		Files: map[string]FileDigest{CastFile: digest(cast.Bytes()), TranscriptFile: digest(raw.Bytes())}}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, nil, err
	}
	for name, data := range map[string][]byte{CastFile: cast.Bytes(), TranscriptFile: raw.Bytes(), ManifestFile: body} {
		if err := putOnce(ctx, store, prefix+name, data, meta.RetainUntil); err != nil {
			return Manifest{}, nil, err
		}
	}
	return m, body, nil
}

// putOnce writes data, or accepts an existing object with the same bytes.
func putOnce(ctx context.Context, store Store, key string, data []byte, retain time.Time) error {
	err := store.Put(ctx, key, data, retain)
	if !errors.Is(err, ErrExists) {
		return err
	}
	old, gerr := store.Get(ctx, key)
	if gerr != nil {
		return gerr
	}
	if !bytes.Equal(old, data) {
		return fmt.Errorf("%s exists with other content: %w", key, ErrExists)
	}
	return nil
}

func digest(b []byte) FileDigest {
	sum := sha256.Sum256(b)
	return FileDigest{SHA256: hex.EncodeToString(sum[:]), Size: len(b)}
}

// Record is one transcript record.
type Record struct {
	Kind byte
	At   time.Duration
	Data []byte
}

// ReadTranscript decodes a transcript, refusing a truncated or malformed one.
func ReadTranscript(b []byte) ([]Record, error) {
	var out []Record
	r := bytes.NewReader(b)
	for r.Len() > 0 {
		kind, _ := r.ReadByte()
		if kind != KindOutput && kind != KindInput && kind != KindResize {
			return nil, fmt.Errorf("record %d: unknown kind %q", len(out), kind)
		}
		at, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, fmt.Errorf("record %d: time: %w", len(out), err)
		}
		n, err := binary.ReadUvarint(r)
		if err != nil || n > uint64(r.Len()) {
			return nil, fmt.Errorf("record %d: length: truncated", len(out))
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, err
		}
		out = append(out, Record{Kind: kind, At: time.Duration(at), Data: data})
	}
	return out, nil
}
