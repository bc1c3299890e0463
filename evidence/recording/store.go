// Package recording records a session's terminal byte for byte: an
// asciicast v2 file for playback, a byte-exact transcript (asciicast
// strings cannot carry invalid UTF-8), and a manifest naming the SHA-256 of
// each, streamed to a write-once store in small segments while the session
// runs so that a crash loses at most one segment.
package recording

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Store keeps evidence objects, once: an object is never overwritten, and
// never deleted before its retention date. S3 with Object Lock implements
// it for production; Dir is the embedded default for development.
//
// A store with versions (S3) names each write: the evidence records the
// version it wrote and reads exactly that one back, so a later write by
// anyone else holding the bucket's keys is never served as evidence.
type Store interface {
	// Put writes a new object, only if key does not exist (ErrExists), and
	// returns the version the store gave it ("" for a store without versions).
	Put(ctx context.Context, key string, data []byte, retainUntil time.Time) (string, error)
	// Get reads the given version of key; "" reads the current one.
	Get(ctx context.Context, key, version string) ([]byte, error)
	// Current is the version a plain read of key sees now: another than the
	// one the evidence names means someone wrote over it.
	Current(ctx context.Context, key string) (string, error)
	// List returns the keys under prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// Check says whether the store can take evidence now; no store, no session.
	Check(ctx context.Context) error
}

// ErrExists is returned by Put for a key already written.
var ErrExists = errors.New("evidence object exists: evidence is written once")

// ErrNotFound is returned by Get for a key never written.
var ErrNotFound = errors.New("evidence object not found")

// ErrMismatch reports evidence in the store that is not what the Session
// (or its manifest) names: another session's, or other bytes.
var ErrMismatch = errors.New("the evidence in the store does not match what the Session names")

// ErrOverwritten reports a key whose current version is not the one the
// evidence wrote.
var ErrOverwritten = errors.New("evidence object was written over: a newer version is not the evidence and is not served")

// ErrRetained is returned when deleting an object before its retention date.
var ErrRetained = errors.New("evidence object is under retention")

// Dir is a write-once directory store: objects are files created
// exclusively and made read-only, with their retention date beside them.
type Dir struct {
	Root string
	Now  func() time.Time
}

func (d *Dir) path(key string) (string, error) {
	clean := filepath.Clean("/" + key)
	if clean == "/" || strings.Contains(key, "..") || strings.HasSuffix(key, ".retain") {
		return "", fmt.Errorf("evidence key %q: not a plain relative name", key)
	}
	return filepath.Join(d.Root, clean), nil
}

// Put writes data under key, refusing an existing key. A directory keeps
// one version of each file: the version is always "".
func (d *Dir) Put(_ context.Context, key string, data []byte, retainUntil time.Time) (string, error) {
	p, err := d.path(key)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	// Written aside and linked into place, never created in place: a
	// write that fails half-way (the disk full) leaves no partial object
	// to refuse the retry as existing.
	body, err := writeAside(dir, data)
	if err != nil {
		return "", err
	}
	defer os.Remove(body)
	retain, err := writeAside(dir, []byte(retainUntil.UTC().Format(time.RFC3339)))
	if err != nil {
		return "", err
	}
	defer os.Remove(retain)
	if err := os.Link(body, p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("%s: %w", key, ErrExists)
		}
		return "", err
	}
	if err := os.Link(retain, p+".retain"); err != nil {
		_ = os.Remove(p) // ours, just linked: the Put did not happen
		return "", err
	}
	return "", nil
}

// writeAside writes data to a new read-only file in dir, synced, and
// returns its name.
func writeAside(dir string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, putPrefix+"*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o440)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// putPrefix names the files a Put writes before linking them into place.
const putPrefix = ".put-"

// Current is always "": files are created exclusively and never rewritten.
func (d *Dir) Current(_ context.Context, key string) (string, error) {
	_, err := d.path(key)
	return "", err
}

// Get reads an object; a directory has one version of each.
func (d *Dir) Get(_ context.Context, key, version string) ([]byte, error) {
	if version != "" {
		return nil, fmt.Errorf("%s: a directory store has no version %q", key, version)
	}
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	return b, err
}

// List returns the keys under prefix.
func (d *Dir) List(_ context.Context, prefix string) ([]string, error) {
	var keys []string
	// From the prefix's own directory, not the root: a store holds every
	// session's segments, and a relay taking many sessions up lists each.
	from := d.Root
	if i := strings.LastIndex(prefix, "/"); i > 0 {
		p, err := d.path(prefix[:i])
		if err != nil {
			return nil, err
		}
		from = p
	}
	err := filepath.WalkDir(from, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() || strings.HasSuffix(p, ".retain") || strings.HasPrefix(e.Name(), putPrefix) {
			return nil
		}
		rel, err := filepath.Rel(d.Root, p)
		if err != nil {
			return err
		}
		if key := filepath.ToSlash(rel); strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	sort.Strings(keys)
	return keys, err
}

// Delete removes an object whose retention date has passed, and refuses
// one still under retention.
func (d *Dir) Delete(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(p + ".retain")
	if err != nil {
		return fmt.Errorf("%s: no retention record, kept: %w", key, err)
	}
	until, err := time.Parse(time.RFC3339, string(raw))
	if err != nil {
		return fmt.Errorf("%s: unreadable retention record, kept: %w", key, err)
	}
	now := time.Now()
	if d.Now != nil {
		now = d.Now()
	}
	if now.Before(until) {
		return fmt.Errorf("%s: until %s: %w", key, until.Format(time.RFC3339), ErrRetained)
	}
	return errors.Join(os.Remove(p), os.Remove(p+".retain"))
}

// Check makes sure the directory exists and is writable.
func (d *Dir) Check(_ context.Context) error {
	if err := os.MkdirAll(d.Root, 0o750); err != nil {
		return fmt.Errorf("recording store %s: %w", d.Root, err)
	}
	f, err := os.CreateTemp(d.Root, ".check-*")
	if err != nil {
		return fmt.Errorf("recording store %s is not writable: %w", d.Root, err)
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}
