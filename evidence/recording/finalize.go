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
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Meta is what the manifest says about the session.
type Meta struct {
	Session     Ref
	Started     time.Time
	RetainUntil time.Time
	// Abnormal marks a recording finalized by someone other than the relay
	// that recorded it (it died mid-session).
	Abnormal bool
	// Segments are the versions the recorder wrote, by key: those are read
	// back, whatever was written over them since. The sweeper, finalizing
	// for a relay that died, has none and reads the current versions.
	Segments map[string]string
}

// FileDigest names one file's hash and size, and the store's version of it.
type FileDigest struct {
	SHA256 string `json:"sha256"`
	Size   int    `json:"size"`
	// +optional: a store without versions (a directory) has none.
	Version string `json:"version,omitempty"`
	// Stored is the object's name when it is not the usual one (that was
	// taken by other bytes: see AltName).
	Stored string `json:"stored,omitempty"`
}

// ManifestVersion is the version of the manifest's format written now:
// version 2 names the session by cluster, namespace, name and UID.
const ManifestVersion = 2

// Manifest lists the recording's files and their hashes. Its own SHA-256 is
// what goes to the transparency log.
type Manifest struct {
	Version int `json:"version"`
	// Session is namespace/name, as version 1 named it.
	Session         string                `json:"session"`
	Cluster         string                `json:"cluster,omitempty"`
	Namespace       string                `json:"namespace,omitempty"`
	Name            string                `json:"name,omitempty"`
	UID             string                `json:"uid,omitempty"`
	Started         time.Time             `json:"started"`
	Segments        int                   `json:"segments"`
	EndedAbnormally bool                  `json:"endedAbnormally"`
	Files           map[string]FileDigest `json:"files"`
	// MissingSegments are segment numbers absent from the store (a gap the
	// recording does not hide); ForeignSegments are objects among the
	// segments the recorder did not write (kept out of the recording).
	MissingSegments []int    `json:"missingSegments,omitempty"`
	ForeignSegments []string `json:"foreignSegments,omitempty"`
}

// segmentName is a segment object's name: eight digits, then .cast or .raw.
var segmentName = regexp.MustCompile(`^([0-9]{8})\.(cast|raw)$`)

type picked struct {
	seqs    []int
	missing []int
	foreign []string
}

// pickSegments chooses the segments a recording is assembled from. The
// relay knows what it wrote (written, by key) and uses exactly that; the
// sweeper, finalizing for a relay that died, takes the well-formed names it
// finds, both parts of each, numbered from 0, and records the gaps. Any
// other object there is named as foreign and left out: someone with the
// bucket's keys cannot slip invented output into a signed recording.
func pickSegments(prefix string, listed []string, written map[string]string) picked {
	var p picked
	parts := map[int]int{}
	for _, k := range listed {
		name := strings.TrimPrefix(k, prefix+segmentsDir)
		m := segmentName.FindStringSubmatch(name)
		_, ours := written[k]
		if m == nil || (written != nil && !ours) {
			p.foreign = append(p.foreign, name)
			continue
		}
		i, _ := strconv.Atoi(m[1])
		parts[i]++
	}
	for k := range written {
		if m := segmentName.FindStringSubmatch(strings.TrimPrefix(k, prefix+segmentsDir)); m != nil {
			i, _ := strconv.Atoi(m[1])
			parts[i] = 2 // the recorder wrote it, whatever the listing shows
		}
	}
	last := -1
	for i := range parts {
		last = max(last, i)
	}
	for i := 0; i <= last; i++ {
		if parts[i] == 2 {
			p.seqs = append(p.seqs, i)
		} else {
			p.missing = append(p.missing, i)
		}
	}
	return p
}

// Finalized is a finalized recording: its manifest, the manifest's bytes
// (their SHA-256 is what is anchored) and the store's version of them.
type Finalized struct {
	Manifest Manifest
	Body     []byte
	Version  string
	// Key is the manifest's name under the recording's prefix.
	Key string
}

// Finalize assembles the session's segments into the playable recording
// and the transcript, and writes the manifest. The relay calls it at the end
// of a session; the sweeper calls it for a session whose relay died.
// Running it again over the same segments is harmless.
func Finalize(ctx context.Context, store Store, meta Meta) (Finalized, error) {
	if err := meta.Session.Check(); err != nil {
		return Finalized{}, err
	}
	prefix := meta.Session.Prefix()
	listed, err := store.List(ctx, prefix+segmentsDir)
	if err != nil {
		return Finalized{}, err
	}
	segs := pickSegments(prefix, listed, meta.Segments)
	var cast, raw bytes.Buffer
	for _, i := range segs.seqs {
		for _, part := range []struct {
			ext string
			buf *bytes.Buffer
		}{{".cast", &cast}, {".raw", &raw}} {
			k := fmt.Sprintf("%s%s%08d%s", prefix, segmentsDir, i, part.ext)
			data, err := store.Get(ctx, k, meta.Segments[k])
			if err != nil {
				return Finalized{}, err
			}
			part.buf.Write(data)
		}
	}
	if len(segs.seqs) == 0 {
		return Finalized{}, fmt.Errorf("recording %s: no segments", prefix)
	}
	ref := meta.Session
	m := Manifest{Version: ManifestVersion, Session: ref.Namespace + "/" + ref.Name,
		Cluster: ref.Cluster, Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID,
		Started: meta.Started.UTC(), Segments: len(segs.seqs), EndedAbnormally: meta.Abnormal, Files: map[string]FileDigest{},
		MissingSegments: segs.missing, ForeignSegments: segs.foreign}
	for name, data := range map[string][]byte{CastFile: cast.Bytes(), TranscriptFile: raw.Bytes()} {
		d := digest(data)
		var stored string
		if stored, d.Version, err = putFinal(ctx, store, prefix, name, AltName(name, d.SHA256), data, meta.RetainUntil); err != nil {
			return Finalized{}, err
		}
		if stored != name {
			d.Stored = stored
		}
		m.Files[name] = d
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Finalized{}, err
	}
	sum := digest(body).SHA256
	stored, version, err := putFinal(ctx, store, prefix, ManifestFile, AltName(ManifestFile, sum), body, meta.RetainUntil)
	if err != nil {
		return Finalized{}, err
	}
	return Finalized{Manifest: m, Body: body, Version: version, Key: stored}, nil
}

// AltName is where a final file goes when its usual name is taken by other
// bytes (planted there by someone with the store's keys before the session
// ended): the name with the start of its SHA-256, so a reader who knows the
// hash (from the Session or the manifest) finds it.
func AltName(name, sha256hex string) string {
	ext := filepath.Ext(name)
	return strings.TrimSuffix(name, ext) + "-" + sha256hex[:min(16, len(sha256hex))] + ext
}

// putFinal writes a final file under its usual name, or, when other bytes
// hold that name, under its AltName: planted objects never stop a
// recording from being finalized. It returns the name used and the version.
func putFinal(ctx context.Context, store Store, prefix, name, alt string, data []byte, retain time.Time) (string, string, error) {
	version, err := putOnce(ctx, store, prefix+name, data, retain)
	if !errors.Is(err, ErrExists) {
		return name, version, err
	}
	version, err = putOnce(ctx, store, prefix+alt, data, retain)
	return alt, version, err
}

// putOnce writes data, or accepts an existing object with the same bytes
// (an earlier finalization), returning its version.
func putOnce(ctx context.Context, store Store, key string, data []byte, retain time.Time) (string, error) {
	version, err := store.Put(ctx, key, data, retain)
	if !errors.Is(err, ErrExists) {
		return version, err
	}
	if version, err = store.Current(ctx, key); err != nil {
		return "", err
	}
	old, err := store.Get(ctx, key, version)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(old, data) {
		return "", fmt.Errorf("%s exists with other content: %w", key, ErrExists)
	}
	return version, nil
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
		if kind != KindOutput && kind != KindInput && kind != KindResize && kind != KindMarker {
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
