// Package checkpoint anchors the audit chain's head in the transparency
// log and keeps it in the evidence store, beside the recordings' anchors:
// the audit log itself (evidence/audit) links no log or store.
package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/tower-dev/breakglass/evidence/audit"
	"github.com/tower-dev/breakglass/evidence/recording"
	"github.com/tower-dev/breakglass/evidence/tlog"
)

// Prefix is where a chain's checkpoints are kept in the store:
// <seq>.json beside its <seq>.rekor-bundle.json and, for stock tools
// (cosign verify-blob), the same anchor as a Sigstore bundle,
// <seq>.sigstore.json.
func Prefix(chain string) string { return "audit/" + chain + "/checkpoints/" }

// BundleSuffix and SigstoreSuffix name a checkpoint's anchor beside it.
const (
	BundleSuffix   = "." + tlog.BundleFile
	SigstoreSuffix = ".sigstore.json"
)

// NamesCheckpoint says whether a file or key names a checkpoint rather than
// one of its anchors.
func NamesCheckpoint(name string) bool {
	return strings.HasSuffix(name, ".json") && !strings.HasSuffix(name, BundleSuffix) && !strings.HasSuffix(name, SigstoreSuffix)
}

// Keeper anchors a log's head, periodically and at shutdown.
type Keeper struct {
	Log       *audit.Log
	Chain     string
	Store     recording.Store
	Anchorer  *tlog.Anchorer
	Retention time.Duration
	// Logger tells of checkpoints that failed.
	Logger logr.Logger

	mu   sync.Mutex
	last uint64
}

// Checkpoint signs and anchors the head if it moved since the last
// checkpoint, and keeps it with its bundle in the store.
func (c *Keeper) Checkpoint(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	seq, hash := c.Log.Head()
	if seq == 0 || seq == c.last {
		return nil
	}
	body, err := json.Marshal(audit.Checkpoint{Chain: c.Chain, Seq: seq, Hash: hash, Time: time.Now().UTC()})
	if err != nil {
		return err
	}
	b, err := c.Anchorer.Anchor(ctx, body)
	if err != nil {
		return fmt.Errorf("anchoring the audit chain's head (seq %d): %w", seq, err)
	}
	raw, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	sigstore, err := b.Sigstore(body)
	if err != nil {
		return err
	}
	// Named by the head's hash as well: nobody can plant a checkpoint
	// under a name the relay will later need.
	key := fmt.Sprintf("%s%020d-%s", Prefix(c.Chain), seq, hash[:min(16, len(hash))])
	retain := time.Now().Add(c.Retention)
	for k, data := range map[string][]byte{key + ".json": body, key + BundleSuffix: raw, key + SigstoreSuffix: sigstore} {
		if _, err := c.Store.Put(ctx, k, data, retain); err != nil && !errors.Is(err, recording.ErrExists) {
			return fmt.Errorf("keeping the audit checkpoint: %w", err)
		}
	}
	c.last = seq
	return nil
}

// Run checkpoints every interval until ctx ends, then once more (the head
// at shutdown), with a few seconds of its own.
func (c *Keeper) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
			defer cancel()
			if err := c.Checkpoint(final); err != nil {
				c.Logger.Error(err, "the audit checkpoint at shutdown")
			}
			return
		case <-t.C:
			if err := c.Checkpoint(ctx); err != nil {
				c.Logger.Error(err, "an audit checkpoint failed; the next one covers it")
			}
		}
	}
}

// Latest is the newest checkpoint of chain in store that a
// signed and logged it (anchored by a's key, in a's log), or a zero
// Checkpoint when there is none: where a relay without an audit file
// continues the chain after a restart, and what a relay with one checks its
// file against. Anything else under the checkpoints' prefix is passed over.
func Latest(ctx context.Context, store recording.Store, chain string, a *tlog.Anchorer) (audit.Checkpoint, error) {
	keys, err := store.List(ctx, Prefix(chain))
	if err != nil {
		return audit.Checkpoint{}, err
	}
	pub, err := a.Signer.PublicKey()
	if err != nil {
		return audit.Checkpoint{}, err
	}
	var logKey []byte
	for i := len(keys) - 1; i >= 0; i-- {
		if !NamesCheckpoint(keys[i]) {
			continue
		}
		body, err := store.Get(ctx, keys[i], "")
		if err != nil {
			return audit.Checkpoint{}, err
		}
		var cp audit.Checkpoint
		if json.Unmarshal(body, &cp) != nil || cp.Chain != chain {
			continue
		}
		raw, err := store.Get(ctx, strings.TrimSuffix(keys[i], ".json")+BundleSuffix, "")
		if err != nil {
			continue
		}
		var b tlog.Bundle
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		if logKey == nil {
			if logKey, err = a.LogPublicKey(ctx); err != nil {
				return audit.Checkpoint{}, err
			}
		}
		if _, err := b.VerifySigned(ctx, body, logKey, tlog.Signer{Key: pub}); err != nil {
			continue
		}
		return cp, nil
	}
	return audit.Checkpoint{}, nil
}
